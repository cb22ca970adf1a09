// The job form:
// - a TANGO dataset has one setting, `open`; the masked datasets have pre and post. Choosing a dataset ticks the
//   settings it has (the server checks them again; this only saves a failed round trip);
// - the job's size (instances x settings x samples) and its time at the model's recent pace are shown as the form is
//   filled in, from #job-sizing (generation/selectors.py, job_sizing). The distractor filters are not counted here:
//   with one set the size is an upper bound, and "Show size and time" counts exactly.
import { durationRangeText, durationText } from "./generation-jobs.js";

const dataset = document.querySelector("form select[name=dataset]");
const form = dataset && dataset.form;
const boxes = form ? [...form.querySelectorAll("input[name=settings]")] : [];

function kindOf(option) {
  const match = option && option.textContent.trim().match(/\(([\w-]+)\)$/);  // "name (kind)"
  return match ? match[1] : "";
}

function tick() {
  const tango = kindOf(dataset.selectedOptions[0]) === "tango";
  for (const box of boxes) box.checked = tango ? box.value === "open" : box.value !== "open";
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function showSize() {
  const holder = document.getElementById("job-size");
  const data = document.getElementById("job-sizing");
  if (!holder || !data) return;
  const sizing = JSON.parse(data.textContent);
  const value = (name) => (form.querySelector(`[name=${name}]`) || { value: "" }).value.trim();
  const perDataset = sizing.instances[dataset.value] || {};
  let pronouns = [...form.querySelectorAll("input[name=pronouns]:checked")].map((box) => box.value);
  if (!pronouns.length) pronouns = Object.keys(perDataset);  // none ticked: every pronoun (the definition's default)
  const perPronoun = parseInt(value("per_pronoun"), 10);
  const instances = pronouns.reduce(
    (sum, pronoun) => sum + Math.min(perDataset[pronoun] || 0, perPronoun > 0 ? perPronoun : Infinity), 0);
  const settings = boxes.filter((box) => box.checked).length;
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
  dataset.addEventListener("change", tick);
  // A fresh form follows the dataset shown first; a form sent back (with errors, or sized by "Show size and time")
  // keeps what was chosen, so that the job queued is the one sized.
  if (!form.hasAttribute("data-sent")) tick();
  if (!document.querySelector("#job-size[data-counted]")) showSize();  // a counted preview stays until the form changes
  form.addEventListener("input", showSize);
  form.addEventListener("change", showSize);
}
