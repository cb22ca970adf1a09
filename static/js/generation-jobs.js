// Live progress for the job list: poll the API for each queued or running job until it ends.
const ACTIVE = new Set(["queued", "running"]);
const POLL_MS = 2000;

async function refresh(row) {
  const response = await fetch(row.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) return false;
  const job = await response.json();
  row.dataset.status = job.status;
  row.querySelector(".status").textContent = job.status;
  const bar = row.querySelector("progress");
  bar.max = job.total_generations;
  bar.value = job.done_generations;
  row.querySelector(".done").textContent = job.done_generations;
  if (!ACTIVE.has(job.status)) {
    const cancel = row.querySelector("form.cancel");
    if (cancel) cancel.remove();
    return false;
  }
  return true;
}

function poll(row) {
  setTimeout(async () => {
    let again = true;
    try {
      again = await refresh(row);
    } catch (error) {
      again = true; // a network blip: try again next time
    }
    if (again) poll(row);
  }, POLL_MS);
}

for (const row of document.querySelectorAll("#jobs tr[data-job-id]")) {
  if (ACTIVE.has(row.dataset.status)) poll(row);
}
