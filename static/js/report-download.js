// Report downloads that take a while to build (the HTML report: every figure drawn into one file, 10-15 s on a busy
// machine): a click says at once that the file is being built and counts the seconds, fetches it, and hands it to
// the browser as a download with the server's file name. Without JavaScript the link downloads as any link does.
"use strict";

const STATUS_CLASS = "download-status";

function fileName(response, fallback) {
  const header = response.headers.get("Content-Disposition") || "";
  const match = header.match(/filename="([^"]+)"/);
  return match ? match[1] : fallback;
}

function statusFor(link) {
  let status = link.nextElementSibling;
  if (!status || !status.classList.contains(STATUS_CLASS)) {
    status = document.createElement("span");
    status.className = `${STATUS_CLASS} muted`;
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    link.after(status);
  }
  return status;
}

async function download(link) {
  const status = statusFor(link);
  const started = performance.now();
  const seconds = () => Math.round((performance.now() - started) / 1000);
  const what = link.dataset.buildFeedback || "the file";
  status.textContent = ` Building ${what}…`;
  const tick = setInterval(() => { status.textContent = ` Building ${what}… ${seconds()} s`; }, 1000);
  link.setAttribute("aria-busy", "true");
  try {
    const response = await fetch(link.href, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    const blob = await response.blob();
    const url = URL.createObjectURL(blob);
    const save = document.createElement("a");
    save.href = url;
    save.download = fileName(response, link.href.split("/").filter(Boolean).pop());
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    status.textContent = ` Downloaded (${seconds()} s).`;
  } catch (failure) {
    status.textContent = ` Could not build ${what} (${failure.message}); try again.`;
  } finally {
    clearInterval(tick);
    link.removeAttribute("aria-busy");
  }
}

document.addEventListener("click", (event) => {
  const link = event.target instanceof Element ? event.target.closest("a[data-build-feedback]") : null;
  if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  if (link.getAttribute("aria-busy") === "true") return;  // one build at a time per link
  download(link);
});
