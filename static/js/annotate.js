// The annotation page: keyboard-first labelling of one pool against the blinded annotator API.
// Plain ES module, no build step. Everything the page shows comes from /api/annotate/...
// Spans are sent in code points of the generated text (see annotate-text.js).

import { controlMarker, pieces } from "./annotate-text.js";
import { focusReferents, referentsAnswer, referentsKey, referentsMissing, referentsRender } from "./referents.js";

const root = document.getElementById("annotate");
const $ = (id) => document.getElementById(id);
const els = {
  form: $("annotate-form"),
  done: $("annotate-done"),
  context: $("annotate-context"),
  generation: $("annotate-generation"),
  marked: $("annotate-marked"),
  labels: $("annotate-labels"),
  extraneous: $("annotate-extraneous"),
  notes: $("annotate-notes"),
  back: $("annotate-back"),
  save: $("annotate-save"),
  progress: $("annotate-progress"),
  position: $("annotate-position"),
  phase: $("annotate-phase"),
  live: $("annotate-live"),
  error: $("annotate-error"),
  feedback: $("annotate-feedback"),
  feedbackText: $("annotate-feedback-text"),
  feedbackContinue: $("annotate-feedback-continue"),
  qualification: $("annotate-qualification"),
  qualificationText: $("annotate-qualification-text"),
  help: $("annotate-help"),
  helpOpen: $("annotate-help-open"),
  shortcuts: $("annotate-shortcuts"),
};
const labelNames = JSON.parse($("annotate-label-names").textContent);
const csrfToken = root.querySelector("input[name=csrfmiddlewaretoken]").value;
const pool = root.dataset.pool;
const SHORTCUTS_KEY = "concord.annotate.shortcuts";
const LAST_KEY = `concord.annotate.last.${pool}`;
// An answer whose save never got through is kept in this tab, and shown again when its item is (even after a reload).
const draftKey = (id) => `concord.annotate.draft.${id}`;

let current = null; // the item payload on screen
// The last item shown, for going back from the "all done" screen (kept across reloads of this tab).
let lastItem = sessionStorage.getItem(LAST_KEY);
let marks = []; // [[start, end], ...] code-point spans in the generated text
let cursor = -1; // index of the word under the keyboard cursor
let shownAt = 0; // when the current item appeared, for the time on item
let busy = false;
let goOn = null; // after a training item's feedback: what Continue does

function announce(text) {
  // Clearing first makes screen readers repeat an identical message.
  els.live.textContent = "";
  window.setTimeout(() => { els.live.textContent = text; }, 30);
}

function showError(text) {
  els.error.textContent = text;
}

const sleep = (ms) => new Promise((resolve) => { window.setTimeout(resolve, ms); });

// Transport ---------------------------------------------------------------------------------------------------------

// Answers that mean "the request may not have reached Concord": a proxy or a restarting server. Saves carry an
// idempotency key (the same on every try), so they are sent again rather than lost, and never written twice.
const TRANSIENT = new Set([502, 503, 504]);
const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 8000];

// `serverErrorRetries`: how many times another 5xx (a 500: a dropped database connection, say) is tried again too.
async function request(url, options = {}, { serverErrorRetries = 0 } = {}) {
  let serverErrorsLeft = serverErrorRetries;
  for (let attempt = 0; ; attempt += 1) {
    let response = null;
    try {
      response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, ...options });
    } catch {
      response = null; // network error: offline, connection reset, server down
    }
    if (response && response.status >= 500 && !TRANSIENT.has(response.status) && serverErrorsLeft > 0) {
      serverErrorsLeft -= 1;
      showError("Server error; trying again…");
      await sleep(RETRY_DELAYS_MS[0]);
      continue;
    }
    if (response && !TRANSIENT.has(response.status)) {
      if (attempt > 0) showError("");
      if (response.status === 204) return { status: 204, data: null };
      let data = null;
      try { data = await response.json(); } catch { data = null; }
      return { status: response.status, data };
    }
    if (attempt >= RETRY_DELAYS_MS.length) return { status: response ? response.status : 0, data: null, transport: true };
    showError(`Connection problem; trying again (${attempt + 1} of ${RETRY_DELAYS_MS.length})…`);
    await sleep(RETRY_DELAYS_MS[attempt]);
  }
}

function scoped(url) {
  return pool ? `${url}?pool=${encodeURIComponent(pool)}` : url;
}

function itemUrl(id) {
  return scoped(root.dataset.itemUrl.replace("ITEM", encodeURIComponent(id)));
}

function problem(status, data, transport) {
  if (transport) return "the server could not be reached";
  return data?.detail || Object.values(data || {}).flat().join(" ") || `error ${status}`;
}

// Rendering --------------------------------------------------------------------------------------------------------

function wordElements() {
  return Array.from(els.generation.querySelectorAll(".annotate-word"));
}

function overlaps(span, start, end) {
  return span[0] < end && start < span[1];
}

function controlElement(char) {
  const node = document.createElement("span");
  node.className = "annotate-control";
  node.textContent = controlMarker(char);
  node.title = "an invisible direction control, shown here instead of obeyed";
  return node;
}

// Text with its direction controls shown as markers, so they cannot reorder what the annotator reads.
function fillVisible(parent, text, { markWords = false } = {}) {
  parent.replaceChildren();
  for (const part of pieces(text)) {
    if (part.kind === "control") parent.append(controlElement(part.text));
    else if (part.kind === "word" && markWords) {
      const word = document.createElement("span");
      word.className = "annotate-word";
      word.dataset.start = String(part.start);
      word.dataset.end = String(part.end);
      word.textContent = part.text;
      parent.append(word);
    } else parent.append(part.text);
  }
}

function paintMarks() {
  const list = wordElements();
  const markedWords = [];
  list.forEach((word, i) => {
    const start = Number(word.dataset.start);
    const end = Number(word.dataset.end);
    const isMarked = marks.some((span) => overlaps(span, start, end));
    word.classList.toggle("marked", isMarked);
    word.classList.toggle("cursor", i === cursor);
    if (isMarked) markedWords.push(word.textContent);
  });
  els.marked.textContent = markedWords.length ? `Marked: ${markedWords.join(", ")}` : "No words marked.";
}

function renderLabels(labels, chosen) {
  els.labels.querySelectorAll("label").forEach((node) => node.remove());
  labels.forEach((label, i) => {
    const wrapper = document.createElement("label");
    const input = document.createElement("input");
    input.type = "radio";
    input.name = "label";
    input.value = label;
    input.checked = label === chosen;
    const key = document.createElement("kbd");
    key.textContent = String(i + 1);
    wrapper.append(input, " ", key, " ", labelNames[label] || label);
    els.labels.append(wrapper);
  });
}

function showPanel(panel) {
  // One of: the form, the "all done" card, the qualification result.
  for (const node of [els.form, els.done, els.qualification]) node.hidden = node !== panel;
  hideFeedback();
}

function render(item) {
  current = item;
  lastItem = item.item;
  sessionStorage.setItem(LAST_KEY, item.item);
  const draft = readDraft(item.item);
  const saved = draft || item.annotation;
  showPanel(els.form);
  showError(draft ? "Your last answer to this item was not saved (the server could not be reached); it is restored here: press Enter to save it." : "");
  fillVisible(els.context, item.context);
  fillVisible(els.generation, item.generation, { markWords: true });
  marks = saved ? saved.extraneous_spans.map((span) => [span[0], span[1]]) : [];
  cursor = -1;
  paintMarks();
  renderLabels(item.labels, saved ? saved.label : null);
  referentsRender(item, saved, { changed: proposeLabel });
  els.extraneous.checked = saved ? saved.extraneous : false;
  els.notes.value = saved ? saved.notes : "";
  const tags = new Set(saved ? saved.tags : []);
  els.form.querySelectorAll("input[name=tags]").forEach((box) => { box.checked = tags.has(box.value); });
  els.back.disabled = !item.previous;
  els.phase.hidden = item.phase !== "training";
  els.progress.max = item.total;
  els.progress.value = item.done;
  const label = saved && (labelNames[saved.label] || saved.label);
  const state = draft ? `not saved yet, restored as ${label}` : saved ? `saved as ${label}` : "not yet labelled";
  els.position.textContent = `Item ${item.position} of ${item.total} · ${item.done} done`;
  shownAt = performance.now();
  history.replaceState(null, "", `#${item.item}`);
  if (els.form.contains(document.activeElement) || document.activeElement === document.body) root.focus({ preventScroll: true });
  const training = item.phase === "training" ? " Training item: you will see the expected answer after saving." : "";
  return `Item ${item.position} of ${item.total}, ${state}.${training}`;
}

function readDraft(id) {
  try {
    return JSON.parse(sessionStorage.getItem(draftKey(id)) || "null");
  } catch {
    return null;
  }
}

// A study participant's page (data-finish-url) goes on to the finish page: their code, or more items.
function studyFinish() {
  if (root.dataset.finishUrl) window.location.assign(root.dataset.finishUrl);
}

function renderDone() {
  current = null;
  studyFinish();
  showPanel(els.done);
  els.progress.value = els.progress.max;
  els.position.textContent = "All items done";
  history.replaceState(null, "", "#done");
  root.focus({ preventScroll: true });  // focus for screen readers; the page stays where it is
  return "All items are done.";
}

const percent = (share) => `${Math.round(share * 100)}%`;

// The qualification round was failed: say why instead of showing items (403 with a "qualification" body).
function renderQualification(data) {
  const q = data.qualification;
  current = null;
  studyFinish();
  showPanel(els.qualification);
  showError("");
  els.position.textContent = `Training round: ${percent(q.score)}`;
  // The server's sentence says it all (the score, the pass mark, what to do): shown once, nothing added.
  els.qualificationText.textContent =
    data.detail || `You scored ${percent(q.score)}; this pool needs ${percent(q.pass_mark)}.`;
  root.focus({ preventScroll: true });
  return els.qualificationText.textContent;
}

function hideFeedback() {
  els.feedback.hidden = true;
  goOn = null;
}

// A training item's answer, shown after its save; Continue (or Enter) goes on.
function renderFeedback(feedback, label, next) {
  const expected = labelNames[feedback.expected_label] || feedback.expected_label;
  const yours = labelNames[label] || label;
  // Each part of the answer says whether it was right: the label, then the extraneous flag where one is expected.
  const verdict = feedback.correct ? `Label right: ${expected}.` : `Label wrong: expected ${expected}; you chose ${yours}.`;
  let extraneous = "";
  const flagExpected = feedback.expected_extraneous;
  if (flagExpected !== null && flagExpected !== undefined) {
    const said = (on) => (on ? "yes" : "no");
    extraneous = feedback.extraneous_correct === false
      ? ` Extraneous gendered language wrong: expected ${said(flagExpected)}; you said ${said(!flagExpected)}.`
      : ` Extraneous gendered language right: ${said(flagExpected)}.`;
  }
  const allRight = feedback.correct && feedback.extraneous_correct !== false;
  els.feedbackText.textContent = `${verdict}${extraneous} ${feedback.explanation || ""}`.trim();
  els.feedback.hidden = false;
  els.feedback.classList.toggle("wrong", !allRight);
  goOn = next;
  els.feedbackContinue.focus();
  announce(`${els.feedbackText.textContent} Press Enter to go on.`);
}

// Loading ----------------------------------------------------------------------------------------------------------

function failedLoad(status, data, transport, what) {
  if (status === 403 && data?.qualification) {
    announce(renderQualification(data));
    return;
  }
  showError(`Could not load ${what}: ${problem(status, data, transport)}.`);
}

async function loadNext(prefix = "") {
  const { status, data, transport } = await request(scoped(root.dataset.nextUrl));
  if (status === 204) return announce(prefix + renderDone());
  if (status !== 200) return failedLoad(status, data, transport, "the next item");
  announce(prefix + render(data));
}

async function loadItem(id, prefix = "") {
  const { status, data, transport } = await request(itemUrl(id));
  if (status !== 200) {
    failedLoad(status, data, transport, "that item");
    return false;
  }
  announce(prefix + render(data));
  return true;
}

// Actions ----------------------------------------------------------------------------------------------------------

function chosenLabel() {
  return els.form.querySelector("input[name=label]:checked")?.value || null;
}

function answer(item, label) {
  return {
    item: item.item,
    label,
    extraneous: els.extraneous.checked,
    extraneous_spans: [...marks].sort((a, b) => a[0] - b[0]),
    notes: els.notes.value,
    tags: Array.from(els.form.querySelectorAll("input[name=tags]:checked"), (box) => box.value),
    seconds: Math.max(0, (performance.now() - shownAt) / 1000),
    ...referentsAnswer(),
  };
}

// Distractor items: the referents propose the label (about the target); the annotator may change it.
function proposeLabel(label, said) {
  const radio = label && els.labels.querySelector(`input[name=label][value="${label}"]`);
  if (radio) radio.checked = true;
  announce(radio ? `${said}. Label proposed: ${labelNames[label] || label}` : said);
}

// Every try of one answer carries the same idempotency key, so a try that reached the server before its answer was
// lost is not written twice (its time not counted twice); a changed answer gets a new key. docs/api.md, the save.
let pendingKey = null; // { answer, key } of the answer last sent without a definite reply

function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // also on plain HTTP, unlike crypto.randomUUID
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function idempotencyKey(body) {
  const { seconds, ...rest } = body; // the time keeps running between tries: the same answer all the same
  const answerText = JSON.stringify(rest);
  if (pendingKey?.answer !== answerText) pendingKey = { answer: answerText, key: newKey() };
  return pendingKey.key;
}

async function save() {
  if (goOn) return continueAfterFeedback();
  if (!current || busy) return;
  // Distractor items: the referents come first, since they propose the label.
  if (referentsMissing()) {
    showError("Every highlighted pronoun needs a referent: t target, o other person, u unclear.");
    announce("Every highlighted pronoun needs a referent.");
    focusReferents();
    return;
  }
  const label = chosenLabel();
  if (!label) {
    const keys = current.labels.map((_, i) => i + 1).join(", ");
    showError(`Choose a label first (keys ${keys}).`);
    announce(`Choose a label first, keys ${keys}.`);
    return;
  }
  busy = true;
  els.save.disabled = true;
  const item = current;
  try {
    const body = answer(item, label);
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json",
      "X-CSRFToken": csrfToken,
      "Idempotency-Key": idempotencyKey(body),
    };
    const { status, data, transport } = await request(
      root.dataset.saveUrl,
      { method: "POST", headers, body: JSON.stringify(body) },
      { serverErrorRetries: 1 },
    );
    if (transport || status >= 500) sessionStorage.setItem(draftKey(item.item), JSON.stringify(body));
    else sessionStorage.removeItem(draftKey(item.item));
    if (!transport && status < 500) pendingKey = null;
    if (status === 403 && data?.qualification) return announce(renderQualification(data));
    if (status === 409) {
      // A training answer is final: it was saved before (perhaps by a try whose answer the network lost). Go on.
      announce(`${problem(status, data, transport)} Going on.`);
      await (item.next ? loadItem(item.next) : loadNext());
      showError(`Not changed: ${problem(status, data, transport)}`);
      return;
    }
    if (status !== 200 && status !== 201) {
      const detail = problem(status, data, transport);
      const again = transport ? " Your answer is still here: press Enter to try again." : "";
      showError(`Not saved: ${detail}.${again}`);
      announce(`Not saved: ${detail}.${again}`);
      return;
    }
    const prefix = `Saved item ${item.position} as ${labelNames[label] || label}. `;
    // Walking forward through earlier work goes item by item; otherwise on to the first unlabelled one.
    const next = () => (item.next ? loadItem(item.next, prefix) : loadNext(prefix));
    if (data?.feedback) renderFeedback(data.feedback, label, next);
    else await next();
  } finally {
    busy = false;
    els.save.disabled = false;
  }
}

async function continueAfterFeedback() {
  const next = goOn;
  hideFeedback();
  if (!next || busy) return;
  busy = true;
  try { await next(); } finally { busy = false; }
}

async function back() {
  if (busy) return;
  hideFeedback();
  const target = current ? current.previous : lastItem;
  if (!target) return announce("This is the first item.");
  busy = true;
  try { await loadItem(target); } finally { busy = false; }
}

function chooseLabel(index) {
  const radios = els.labels.querySelectorAll("input[name=label]");
  if (index < radios.length) {
    radios[index].checked = true;
    announce(labelNames[radios[index].value] || radios[index].value);
  }
}

function setExtraneous(on) {
  els.extraneous.checked = on;
  if (!on && marks.length) {
    marks = [];
    paintMarks();
    return announce("Extraneous off; marks cleared.");
  }
  announce(on ? "Extraneous on." : "Extraneous off.");
}

function toggleWord(word, speak = true) {
  const start = Number(word.dataset.start);
  const end = Number(word.dataset.end);
  const wasMarked = marks.some((span) => overlaps(span, start, end));
  if (wasMarked) marks = marks.filter((span) => !overlaps(span, start, end));
  else {
    marks.push([start, end]);
    els.extraneous.checked = true;
  }
  paintMarks();
  if (speak) announce(`${word.textContent} ${wasMarked ? "unmarked" : "marked"}.`);
}

function moveCursor(step) {
  const list = wordElements();
  if (!list.length) return;
  cursor = cursor < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, cursor + step));
  paintMarks();
  const word = list[cursor];
  word.scrollIntoView({ block: "nearest" });
  announce(`${word.textContent}${word.classList.contains("marked") ? ", marked" : ""}. Word ${cursor + 1} of ${list.length}.`);
}

function markAtCursor() {
  const list = wordElements();
  if (cursor < 0) return moveCursor(1);
  toggleWord(list[cursor]);
}

function enterWords() {
  els.generation.focus();
  if (cursor < 0) moveCursor(1);
}

// Mouse: click a word to toggle it, or drag across words to mark them all.
els.generation.addEventListener("mouseup", (event) => {
  const selection = window.getSelection();
  if (!selection || selection.isCollapsed) {
    const word = event.target.closest?.(".annotate-word");
    if (word) toggleWord(word);
    return;
  }
  const picked = wordElements().filter((word) => selection.containsNode(word, true));
  selection.removeAllRanges();
  let added = 0;
  for (const word of picked) {
    const start = Number(word.dataset.start);
    const end = Number(word.dataset.end);
    if (!marks.some((span) => overlaps(span, start, end))) {
      marks.push([start, end]);
      added += 1;
    }
  }
  if (added) els.extraneous.checked = true;
  paintMarks();
  announce(`${added} word${added === 1 ? "" : "s"} marked.`);
});

els.extraneous.addEventListener("change", () => setExtraneous(els.extraneous.checked));
els.form.addEventListener("submit", (event) => { event.preventDefault(); save(); });
els.back.addEventListener("click", () => back());
els.feedbackContinue.addEventListener("click", () => continueAfterFeedback());

// Keyboard help and the single-key shortcuts switch (WCAG 2.1.4: shortcuts made of one character can be turned off) --

function shortcutsOn() {
  return localStorage.getItem(SHORTCUTS_KEY) !== "off";
}

function openHelp() {
  if (!els.help.open) els.help.showModal();
}

// The pool's current guidelines (present only when the researcher has written some).
const guide = document.getElementById("annotate-guide");

function openGuide() {
  if (guide && !guide.open) guide.showModal();
}

document.getElementById("annotate-guide-open")?.addEventListener("click", () => openGuide());
guide?.querySelector("[data-close]").addEventListener("click", () => guide.close());

els.shortcuts.checked = shortcutsOn();
els.shortcuts.addEventListener("change", () => {
  localStorage.setItem(SHORTCUTS_KEY, els.shortcuts.checked ? "on" : "off");
  announce(els.shortcuts.checked ? "Single-key shortcuts on." : "Single-key shortcuts off.");
});
els.helpOpen.addEventListener("click", () => openHelp());
els.help.querySelector("[data-close]").addEventListener("click", () => els.help.close());

// Keys, in steps: modified keys, keys while typing, keys while feedback is shown, then the page's own keys.

function isTyping(target) {
  return target.matches?.("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=submit]):not([type=button])");
}

function isControl(target) {
  // Buttons, links and disclosure summaries answer Enter and Space themselves.
  return Boolean(target.closest?.("button, a[href], summary"));
}

function onModifiedKey(event) {
  // Ctrl+Enter saves from anywhere, the notes box included.
  if (event.key === "Enter" && (current || goOn)) {
    event.preventDefault();
    save();
  }
}

function onTypingKey(event) {
  if (event.key === "Escape") {
    event.target.blur();
    root.focus({ preventScroll: true });
  }
}

function onFeedbackKey(event) {
  if (event.key === "Enter" && !isControl(event.target)) {
    event.preventDefault();
    continueAfterFeedback();
  }
}

// Keys that are not characters, always on: Enter, Backspace, arrows; Space only inside the generated text.
function onNavigationKey(event) {
  const target = event.target;
  const inGeneration = target === els.generation;
  switch (event.key) {
    case "ArrowRight":
      if (!inGeneration) return false;
      moveCursor(1);
      break;
    case "ArrowLeft":
      if (target.matches?.("input[type=radio]")) return true; // arrows move between radio buttons
      if (inGeneration) moveCursor(-1);
      else back();
      break;
    case "Backspace":
      back();
      break;
    case "Enter":
      if (isControl(target)) return true; // Enter on Previous or a link presses it
      save();
      break;
    case " ":
      if (!inGeneration) return false;
      markAtCursor();
      break;
    default:
      return false;
  }
  event.preventDefault();
  return true;
}

// Single characters: only while the switch is on, and only with an item on screen (except `?`).
const CHARACTER_KEYS = {
  "?": openHelp,
  g: openGuide,
  e: () => setExtraneous(!els.extraneous.checked),
  n: () => els.notes.focus(),
  w: enterWords,
  r: focusReferents,
  m: markAtCursor,
  "]": () => moveCursor(1),
  "[": () => moveCursor(-1),
};

function onCharacterKey(event) {
  if (!shortcutsOn()) return;
  const action = CHARACTER_KEYS[event.key];
  if (action && (current || event.key === "?" || event.key === "g")) {
    event.preventDefault();
    action();
  } else if (current && /^[1-9]$/.test(event.key)) {
    event.preventDefault();
    chooseLabel(Number(event.key) - 1);
  }
}

function onKeydown(event) {
  if (event.altKey || els.help.open || guide?.open) return; // the dialogs handle their own keys (Esc closes them)
  if (event.ctrlKey || event.metaKey) return onModifiedKey(event);
  if (isTyping(event.target)) return onTypingKey(event);
  if (goOn) return onFeedbackKey(event);
  if (referentsKey(event, shortcutsOn())) return;
  if (onNavigationKey(event)) return;
  onCharacterKey(event);
}

document.addEventListener("keydown", onKeydown);
// A save still being sent (or retried) is not given up by closing the tab without a warning.
window.addEventListener("beforeunload", (event) => {
  if (busy) event.preventDefault();
});

// The address names the item: a reload, a bookmark or an edited #id loads that item. ------------------------------

function hashId() {
  try { return decodeURIComponent(location.hash.slice(1)); } catch { return ""; }
}

function openFromHash() {
  const id = hashId();
  if (!id || id === "done") return loadNext();
  if (current && id === current.item) return undefined;
  // An id that is not (or no longer) yours falls back to the queue.
  return loadItem(id).then((ok) => { if (!ok && els.qualification.hidden) { showError(""); loadNext(); } });
}

window.addEventListener("hashchange", () => {
  if (busy) return;
  hideFeedback();
  openFromHash();
});

root.tabIndex = -1;
openFromHash();
