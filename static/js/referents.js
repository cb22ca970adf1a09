// Referents on distractor items (docs/domain.md, "RUFF with distractors"): both people with their pronouns, the
// target marked; every pronoun of the generated text gets target / other / unclear. Offsets come from the server in
// code points and go back unchanged: this module never computes one.
// Keys, on a pronoun button: the arrow keys move round the pronouns (the last to the first); Tab and Shift+Tab move
// on and back in the page's order, so they leave the pronouns after the last and before the first (no trap);
// t / o / u choose (and move to the next open pronoun).

const CHOICES = { t: "target", o: "other", u: "unclear" };
const NAMES = { target: "target", other: "other person", unclear: "unclear" };

const section = document.getElementById("annotate-referents");
const peopleList = document.getElementById("annotate-people");
const tokenList = document.getElementById("annotate-pronouns");
const status = document.getElementById("annotate-referents-status");

let tokens = []; // [{start, end, word, base}] from the item payload
let chosen = []; // referent per token, or null
let target = null; // {name, pronouns, base}
let onChange = () => {};

function buttons() {
  return Array.from(tokenList.querySelectorAll(".referent"));
}

function paint() {
  buttons().forEach((button, i) => {
    const choice = chosen[i];
    button.dataset.referent = choice || "";
    button.querySelector(".referent-choice").textContent = choice ? NAMES[choice] : "?";
    button.setAttribute("aria-label", `${tokens[i].word}: ${choice ? NAMES[choice] : "no referent yet"}`);
  });
  document.querySelectorAll("#annotate-generation .annotate-word").forEach((word) => {
    const i = tokens.findIndex((token) => String(token.start) === word.dataset.start);
    word.classList.toggle("pronoun", i >= 0);
    if (i >= 0) word.dataset.referent = chosen[i] || "";
  });
  const open = chosen.filter((choice) => !choice).length;
  status.textContent = open ? `${open} of ${tokens.length} pronouns still need a referent.` : "Every pronoun has a referent.";
}

// The label the referents suggest, about the target: a target pronoun of another person's base is misgendering.
export function proposedLabel() {
  if (!tokens.length || chosen.some((choice) => !choice)) return null;
  const forTarget = tokens.filter((_, i) => chosen[i] === "target");
  if (forTarget.some((token) => token.base !== target.base)) return "misgendering";
  return forTarget.length ? "correct" : "no_pronoun";
}

export function referentsRender(item, saved, { changed }) {
  onChange = changed;
  tokens = item.pronoun_tokens || [];
  section.hidden = !item.people;
  if (!item.people) {
    chosen = [];
    return;
  }
  target = { ...item.people.find((person) => person.role === "target") };
  target.base = target.pronouns.split("/")[0]; // the nominative names the base (he, she, they, xe)
  peopleList.replaceChildren(
    ...item.people.map((person) => {
      const entry = document.createElement("li");
      entry.className = `person person-${person.role}`;
      const name = document.createElement("strong");
      name.textContent = person.name;
      entry.append(name, ` (${person.pronouns})`);
      if (person.role === "target") {
        const badge = document.createElement("span");
        badge.className = "badge";
        badge.textContent = "target: the label is about this person";
        entry.append(" ", badge);
      } else entry.append(" · the other person");
      return entry;
    }),
  );
  const before = new Map((saved?.referents || []).map((r) => [r.start, r.referent]));
  chosen = tokens.map((token) => before.get(token.start) || null);
  tokenList.replaceChildren(
    ...tokens.map((token, i) => {
      // Not a <button>: Enter on a pronoun saves the item, as everywhere else on the page.
      const button = document.createElement("span");
      button.tabIndex = 0;
      button.setAttribute("role", "button");
      button.className = "referent";
      button.dataset.index = String(i);
      const word = document.createElement("span");
      word.textContent = token.word;
      const choice = document.createElement("span");
      choice.className = "referent-choice";
      button.append(word, " ", choice);
      // A click cycles target -> other -> unclear, for people with a mouse.
      button.addEventListener("click", () => {
        const order = ["target", "other", "unclear"];
        choose(i, order[(order.indexOf(chosen[i]) + 1) % order.length], false);
      });
      return button;
    }),
  );
  paint();
}

function choose(i, referent, advance) {
  chosen[i] = referent;
  paint();
  onChange(proposedLabel(), `${tokens[i].word}: ${NAMES[referent]}`);
  if (!advance) return;
  const next = chosen.findIndex((choice, j) => !choice && j > i);
  const open = next >= 0 ? next : chosen.findIndex((choice) => !choice);
  buttons()[open >= 0 ? open : i].focus();
}

export function referentsMissing() {
  return !section.hidden && chosen.some((choice) => !choice);
}

export function focusReferents() {
  const open = chosen.findIndex((choice) => !choice);
  buttons()[open >= 0 ? open : 0]?.focus();
}

// The answer's `referents` key (distractor items only, so other answers stay as they were).
export function referentsAnswer() {
  if (section.hidden) return {};
  return {
    referents: tokens.map((token, i) => ({ start: token.start, end: token.end, referent: chosen[i] })).filter((r) => r.referent),
  };
}

// True when the key was a referent key on a pronoun button (handled here).
export function referentsKey(event, shortcuts) {
  const button = event.target.closest?.("#annotate-pronouns .referent");
  if (!button) return false;
  const i = Number(button.dataset.index);
  const list = buttons();
  if (["ArrowRight", "ArrowDown", "ArrowLeft", "ArrowUp"].includes(event.key)) {
    const step = event.key === "ArrowRight" || event.key === "ArrowDown" ? 1 : -1;
    list[(i + step + list.length) % list.length].focus();
  } else if (shortcuts && CHOICES[event.key.toLowerCase()]) {
    choose(i, CHOICES[event.key.toLowerCase()], true);
  } else return false;
  event.preventDefault();
  return true;
}
