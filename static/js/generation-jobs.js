// Live progress for the job list and the job page: poll the API for each queued or running job until it ends.
// Each job element carries data-url (its API address) and data-status; inside it, .status (with the place in the
// queue), progress, .done, .elapsed, .eta and .eta-range are kept current, and the Cancel / Resume forms follow the
// job's state. Cancel asks for confirmation first (data-confirm on its form): a cancelled job is never resumed.
const ACTIVE = new Set(["queued", "running"]);
const POLL_MS = 2000;

// A running job without an estimate yet, as generation/views.py ETA_PENDING.
const ETA_PENDING = "estimated after the first batch";

// The same wording as generation/views.py duration_text: 12 s, 3 min 05 s, 2 h 04 min; a dash when unknown.
export function durationText(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  let rest = Math.round(seconds);
  if (rest < 60) return `${rest} s`;
  let minutes = Math.floor(rest / 60);
  rest %= 60;
  if (minutes < 60) return `${minutes} min ${String(rest).padStart(2, "0")} s`;
  const hours = Math.floor(minutes / 60);
  minutes %= 60;
  return `${hours} h ${String(minutes).padStart(2, "0")} min`;
}

// "10 min 05 s–14 min 30 s", as generation/views.py duration_range_text; empty when unknown.
export function durationRangeText(low, high) {
  if (low === null || low === undefined || high === null || high === undefined) return "";
  return `${durationText(low)}–${durationText(high)}`;
}

function setText(root, selector, text) {
  for (const node of root.querySelectorAll(selector)) node.textContent = text;
}

async function refresh(element) {
  const response = await fetch(element.dataset.url, {
    headers: { Accept: "application/json" },
    credentials: "same-origin",
  });
  if (!response.ok) return false;
  const job = await response.json();
  const active = ACTIVE.has(job.status);
  element.dataset.status = job.status;
  setText(element, ".status", job.status_text || job.status);
  setText(element, ".done", job.done_generations);
  setText(element, ".elapsed", durationText(job.elapsed_seconds));
  // A running job without an estimate yet says when it comes (generation/views.py, ETA_PENDING).
  const pending = job.status === "running" && (job.eta_seconds === null || job.eta_seconds === undefined);
  setText(element, ".eta", !active ? "—" : pending ? ETA_PENDING : durationText(job.eta_seconds));
  const range = job.status === "running" ? durationRangeText(job.eta_low_seconds, job.eta_high_seconds) : "";
  for (const node of element.querySelectorAll(".eta-range")) {
    node.textContent = range && node.classList.contains("inline") ? `(${range})` : range;
  }
  for (const bar of element.querySelectorAll("progress")) {
    bar.max = job.total_generations;
    bar.value = job.done_generations;
  }
  if (!active) for (const form of element.querySelectorAll("form.cancel")) form.remove();
  if (job.status === "done") for (const form of element.querySelectorAll("form.resume")) form.remove();
  return active;
}

function poll(element) {
  setTimeout(async () => {
    let again = true;
    try {
      again = await refresh(element);
    } catch (error) {
      again = true; // a network blip: try again next time
    }
    if (again) poll(element);
  }, POLL_MS);
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});

for (const element of document.querySelectorAll("[data-job-id][data-url]")) {
  if (ACTIVE.has(element.dataset.status)) poll(element);
}
