// The annotation page: keyboard-first labelling against the blinded annotator API.
// Plain ES module, no build step. Everything the page shows comes from /api/annotate/...

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
  progress: $("annotate-progress"),
  position: $("annotate-position"),
  live: $("annotate-live"),
  error: $("annotate-error"),
};
const labelNames = JSON.parse($("annotate-label-names").textContent);
const csrfToken = root.querySelector("input[name=csrfmiddlewaretoken]").value;
const WORD = /[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu;

let current = null; // the item payload on screen
// The last item shown, for going back from the "all done" screen (kept across reloads of this tab).
let lastItem = sessionStorage.getItem("annotate-last");
let marks = []; // [[start, end], ...] character spans in the generated text
let cursor = -1; // index of the word under the keyboard cursor
let shownAt = 0; // when the current item appeared, for the time on item
let busy = false;

function announce(text) {
  // Clearing first makes screen readers repeat an identical message.
  els.live.textContent = "";
  window.setTimeout(() => { els.live.textContent = text; }, 30);
}

function showError(text) {
  els.error.textContent = text;
}

async function request(url, options = {}) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, ...options });
  if (response.status === 204) return { status: 204, data: null };
  let data = null;
  try { data = await response.json(); } catch { data = null; }
  return { status: response.status, data };
}

function withPool(url) {
  const pool = root.dataset.pool;
  return pool ? `${url}?pool=${encodeURIComponent(pool)}` : url;
}

function itemUrl(id) {
  return root.dataset.itemUrl.replace("ITEM", encodeURIComponent(id));
}

// Rendering --------------------------------------------------------------------------------------------------------

function words() {
  return Array.from(els.generation.querySelectorAll(".annotate-word"));
}

function overlaps(span, start, end) {
  return span[0] < end && start < span[1];
}

function renderGeneration(text) {
  els.generation.replaceChildren();
  let at = 0;
  for (const match of text.matchAll(WORD)) {
    if (match.index > at) els.generation.append(text.slice(at, match.index));
    const word = document.createElement("span");
    word.className = "annotate-word";
    word.dataset.start = String(match.index);
    word.dataset.end = String(match.index + match[0].length);
    word.textContent = match[0];
    els.generation.append(word);
    at = match.index + match[0].length;
  }
  if (at < text.length) els.generation.append(text.slice(at));
}

function paintMarks() {
  const list = words();
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

function render(item) {
  current = item;
  lastItem = item.item;
  sessionStorage.setItem("annotate-last", item.item);
  const saved = item.annotation;
  els.done.hidden = true;
  els.form.hidden = false;
  showError("");
  els.context.textContent = item.context;
  renderGeneration(item.generation);
  marks = saved ? saved.extraneous_spans.map((span) => [span[0], span[1]]) : [];
  cursor = -1;
  paintMarks();
  renderLabels(item.labels, saved ? saved.label : null);
  els.extraneous.checked = saved ? saved.extraneous : false;
  els.notes.value = saved ? saved.notes : "";
  const tags = new Set(saved ? saved.tags : []);
  els.form.querySelectorAll("input[name=tags]").forEach((box) => { box.checked = tags.has(box.value); });
  els.back.disabled = !item.previous;
  els.progress.max = item.total;
  els.progress.value = item.done;
  const state = saved ? `saved as ${labelNames[saved.label] || saved.label}` : "not yet labelled";
  els.position.textContent = `Item ${item.position} of ${item.total} · ${item.done} done`;
  shownAt = performance.now();
  history.replaceState(null, "", `#${item.item}`);
  if (els.form.contains(document.activeElement) || document.activeElement === document.body) root.focus();
  return `Item ${item.position} of ${item.total}, ${state}.`;
}

function renderDone() {
  current = null;
  els.form.hidden = true;
  els.done.hidden = false;
  els.progress.value = els.progress.max;
  els.position.textContent = "All items done";
  history.replaceState(null, "", "#done");
  root.focus();
  return "All items are done.";
}

// Loading ----------------------------------------------------------------------------------------------------------

async function loadNext(prefix = "") {
  const { status, data } = await request(withPool(root.dataset.nextUrl));
  if (status === 204) return announce(prefix + renderDone());
  if (status !== 200) return showError(data?.detail || `Could not load the next item (${status}).`);
  announce(prefix + render(data));
}

async function loadItem(id, prefix = "") {
  const { status, data } = await request(itemUrl(id));
  if (status !== 200) {
    showError(data?.detail || `Could not load that item (${status}).`);
    return false;
  }
  announce(prefix + render(data));
  return true;
}

// Actions ----------------------------------------------------------------------------------------------------------

function chosenLabel() {
  return els.form.querySelector("input[name=label]:checked")?.value || null;
}

async function save() {
  if (!current || busy) return;
  const label = chosenLabel();
  if (!label) {
    const keys = current.labels.map((_, i) => i + 1).join(", ");
    showError(`Choose a label first (keys ${keys}).`);
    announce(`Choose a label first, keys ${keys}.`);
    return;
  }
  busy = true;
  const item = current;
  const body = {
    item: item.item,
    label,
    extraneous: els.extraneous.checked,
    extraneous_spans: [...marks].sort((a, b) => a[0] - b[0]),
    notes: els.notes.value,
    tags: Array.from(els.form.querySelectorAll("input[name=tags]:checked"), (box) => box.value),
    seconds: Math.max(0, (performance.now() - shownAt) / 1000),
  };
  try {
    const { status, data } = await request(root.dataset.saveUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken },
      body: JSON.stringify(body),
    });
    if (status !== 200 && status !== 201) {
      const detail = data?.detail || Object.values(data || {}).flat().join(" ") || `error ${status}`;
      showError(`Not saved: ${detail}`);
      announce(`Not saved: ${detail}`);
      return;
    }
    const prefix = `Saved item ${item.position} as ${labelNames[label] || label}. `;
    // Walking forward through earlier work goes item by item; otherwise on to the first unlabelled one.
    if (item.next) await loadItem(item.next, prefix);
    else await loadNext(prefix);
  } finally {
    busy = false;
  }
}

async function back() {
  if (busy) return;
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
  const list = words();
  if (!list.length) return;
  cursor = cursor < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, cursor + step));
  paintMarks();
  const word = list[cursor];
  word.scrollIntoView({ block: "nearest" });
  announce(`${word.textContent}${word.classList.contains("marked") ? ", marked" : ""}. Word ${cursor + 1} of ${list.length}.`);
}

function markAtCursor() {
  const list = words();
  if (cursor < 0) return moveCursor(1);
  toggleWord(list[cursor]);
}

// Mouse: click a word to toggle it, or drag across words to mark them all.
els.generation.addEventListener("mouseup", (event) => {
  const selection = window.getSelection();
  if (!selection || selection.isCollapsed) {
    const word = event.target.closest?.(".annotate-word");
    if (word) toggleWord(word);
    return;
  }
  const picked = words().filter((word) => selection.containsNode(word, true));
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

function isTyping(target) {
  return target.matches?.("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=submit]):not([type=button])");
}

document.addEventListener("keydown", (event) => {
  if (event.altKey) return;
  const target = event.target;
  if (event.ctrlKey || event.metaKey) {
    if (event.key === "Enter" && (current || target === els.notes)) { event.preventDefault(); save(); }
    return;
  }
  if (isTyping(target)) {
    if (event.key === "Escape") { target.blur(); root.focus(); }
    return;
  }
  if (target.closest?.(".annotate-guidelines") && (event.key === "Enter" || event.key === " ")) return;
  const inGeneration = target === els.generation;
  const onRadio = target.matches?.("input[type=radio]");
  switch (event.key) {
    case "ArrowRight":
      if (inGeneration) { event.preventDefault(); moveCursor(1); }
      return;
    case "ArrowLeft":
      if (inGeneration) { event.preventDefault(); moveCursor(-1); return; }
      if (onRadio) return; // arrow keys move between radio buttons
      event.preventDefault();
      back();
      return;
    case "Backspace":
      event.preventDefault();
      back();
      return;
    case "Enter":
      if (target === els.back) return; // Enter on the Previous button presses it
      event.preventDefault();
      save();
      return;
    case " ":
      if (inGeneration) { event.preventDefault(); markAtCursor(); }
      return;
    case "e":
      if (!current) return;
      event.preventDefault();
      setExtraneous(!els.extraneous.checked);
      return;
    case "n":
      if (!current) return;
      event.preventDefault();
      els.notes.focus();
      return;
    case "w":
      if (!current) return;
      event.preventDefault();
      els.generation.focus();
      if (cursor < 0) moveCursor(1);
      return;
    case "m":
      if (!current) return;
      event.preventDefault();
      markAtCursor();
      return;
    case "]":
      if (current) { event.preventDefault(); moveCursor(1); }
      return;
    case "[":
      if (current) { event.preventDefault(); moveCursor(-1); }
      return;
    default:
      if (current && /^[1-9]$/.test(event.key)) {
        event.preventDefault();
        chooseLabel(Number(event.key) - 1);
      }
  }
});

root.tabIndex = -1;
const start = decodeURIComponent(location.hash.slice(1));
if (start && start !== "done") {
  // A reload comes back to the item it showed; an id that is not (or no longer) yours falls back to the queue.
  loadItem(start).then((ok) => { if (!ok) { showError(""); loadNext(); } });
} else loadNext();
