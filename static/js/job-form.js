// The job form:
// - what is ticked is what runs. A dataset offers only its own pronoun families (sizing.instances: the families it
//   has instances of) and settings (TANGO: open; the masked datasets: pre and post); the others are hidden and
//   disabled, so they are never sent. Choosing a dataset ticks all it offers; the server checks them again;
// - the job's size (instances x settings x samples) and its time at the model's recent pace are shown as the form is
//   filled in, from #job-sizing (generation/selectors.py, job_sizing), counting what is sent: the ticked boxes, or,
//   none ticked, all the dataset offers (the definition's default). The distractor filters are not counted here:
//   with one set the size is an upper bound, and "Show size and time" counts exactly.
import { durationRangeText, durationText } from "./generation-jobs.js";

const dataset = document.querySelector("form select[name=dataset]");
const form = dataset && dataset.form;
const boxes = form ? [...form.querySelectorAll("input[name=settings]")] : [];
const families = form ? [...form.querySelectorAll("input[name=pronouns]")] : [];
const sizingData = document.getElementById("job-sizing");
const sizing = sizingData ? JSON.parse(sizingData.textContent) : { instances: {}, seconds_per_row: {} };

function kindOf(option) {
  const match = option && option.textContent.trim().match(/\(([\w-]+)\)$/);  // "name (kind)"
  return match ? match[1] : "";
}

function offer(box, offered) {
  const row = box.closest("label") ? box.closest("label").parentElement : box.parentElement;  // Django's option row
  row.hidden = !offered;
  box.disabled = !offered;
  if (!offered) box.checked = false;
}

// Shows only the chosen dataset's families and settings; `tickAll`: ticks every one shown (a fresh form, or another
// dataset chosen), else keeps the ticks sent back (a form with errors, or sized by "Show size and time").
function follow(tickAll) {
  const tango = kindOf(dataset.selectedOptions[0]) === "tango";
  for (const box of boxes) {
    offer(box, tango ? box.value === "open" : box.value !== "open");
    if (tickAll && !box.disabled) box.checked = true;
  }
  const own = Object.keys(sizing.instances[dataset.value] || {});
  for (const box of families) {
    offer(box, !own.length || own.includes(box.value));  // a dataset with no instances yet: all are offered
    if (tickAll && !box.disabled) box.checked = true;
  }
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function showSize() {
  const holder = document.getElementById("job-size");
  if (!holder || !sizingData) return;
  const value = (name) => (form.querySelector(`[name=${name}]`) || { value: "" }).value.trim();
  const perDataset = sizing.instances[dataset.value] || {};
  let pronouns = families.filter((box) => box.checked && !box.disabled).map((box) => box.value);
  if (!pronouns.length) pronouns = Object.keys(perDataset);  // none ticked: every pronoun (the definition's default)
  const perPronoun = parseInt(value("per_pronoun"), 10);
  const instances = pronouns.reduce(
    (sum, pronoun) => sum + Math.min(perDataset[pronoun] || 0, perPronoun > 0 ? perPronoun : Infinity), 0);
  // None ticked: every setting the dataset has (the definition's default).
  const settings = boxes.filter((box) => box.checked && !box.disabled).length
    || boxes.filter((box) => !box.disabled).length;
  const samples = parseInt(value("samples"), 10) || 0;
  const rows = instances * settings * samples;
  const filtered = value("distractors") !== "" || value("sample_seed") !== "";
  let text = `${filtered ? "At most " : ""}${plural(instances, "instance")} × ${plural(settings, "setting")} × `
    + `${plural(samples, "sample")} = ${plural(rows, "continuation")}`;
  const perRow = sizing.seconds_per_row[value("model")];
  if (perRow === null || perRow === undefined) {
    text += "; no time estimate yet: this model has not run here, so its first job shows it after its first batch.";
  } else {
    const seconds = rows * perRow;
    text += `, about ${durationText(seconds)} (${durationRangeText(seconds * 0.5, seconds * 2)}) at this model's `
      + `recent pace here (${perRow.toFixed(1)} s a continuation).`;
  }
  holder.replaceChildren(Object.assign(document.createElement("p"), { textContent: text }));
}

if (dataset && boxes.length) {
  dataset.addEventListener("change", () => follow(true));
  // A fresh form follows the dataset shown first; a form sent back (with errors, or sized by "Show size and time")
  // keeps what was chosen, so that the job queued is the one sized.
  follow(!form.hasAttribute("data-sent"));
  if (!document.querySelector("#job-size[data-counted]")) showSize();  // a counted preview stays until the form changes
  form.addEventListener("input", showSize);
  form.addEventListener("change", showSize);
}
