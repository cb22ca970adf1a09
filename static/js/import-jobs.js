// The pool page's imports (templates/annotation/pool_detail.html): while one is queued or running, ask the API for
// the pool's imports (soon after the page comes, since a small file is done in well under a second, then every two
// seconds), show each one's state, and reload the page once one has ended (its items, counts and errors then come
// from the server).
const table = document.querySelector("table[data-import-poll]");
const ACTIVE = new Set(["queued", "reading", "writing"]);

function stateText(job) {
  if (job.status === "queued") return "queued";
  if (job.status === "reading") return `checking: ${job.rows_read} rows read`;
  if (job.status === "writing") return `writing: ${job.rows_written} of ${job.rows_read} rows`;
  return job.status;
}

const DELAYS = [300, 700, 1000]; // then every 2000 ms

// Whether to ask again: false once the page reloads for an import that has ended.
async function poll() {
  let jobs;
  try {
    const response = await fetch(table.dataset.importPoll, { headers: { Accept: "application/json" } });
    if (!response.ok) return true;
    jobs = await response.json();
  } catch {
    return true; // a dropped connection: the next round asks again
  }
  for (const job of jobs) {
    const row = document.getElementById(`import-${job.id}`);
    if (!row) continue;
    if (ACTIVE.has(row.dataset.status) && !ACTIVE.has(job.status)) {
      window.location.reload();
      return false;
    }
    row.querySelector(".import-state").textContent = stateText(job);
  }
  return true;
}

function schedule(round) {
  setTimeout(async () => {
    if (await poll()) schedule(round + 1);
  }, DELAYS[round] ?? 2000);
}

if (table && [...table.querySelectorAll("tr[data-status]")].some((row) => ACTIVE.has(row.dataset.status))) {
  schedule(0);
}
