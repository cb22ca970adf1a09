// The pool page's generations import (templates/annotation/pool_detail.html): "Check and preview" is sent in the
// background and its answer shown in place, so that the files chosen stay chosen for Import, as the label uploads
// keep theirs. Without this script the button posts the page, which shows the same preview and asks for the files
// again (a browser never fills a file input from a page). A refusal of the form itself (no file, a bad label set)
// replaces the whole form, as the page would.
async function preview(form, button) {
  const body = new FormData(form, button);
  button.disabled = true;
  try {
    const response = await fetch(form.action, {
      method: "POST", body, credentials: "same-origin", headers: { "X-Preview-In-Place": "1" },
    });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.querySelector("form.generations-import");
    if (!fresh) throw new Error(`no import form in the answer (${response.status})`);
    if (fresh.querySelector(".import-failed")) {
      form.replaceWith(fresh);
      fresh.querySelector(".import-failed").scrollIntoView({ block: "nearest" });
      return;
    }
    const result = fresh.querySelector(".generations-preview-result");
    form.querySelector(".generations-preview-result").replaceWith(result);
    result.scrollIntoView({ block: "nearest" });
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("submit", (event) => {
  const form = event.target.closest && event.target.closest("form.generations-import");
  if (!form || form.dataset.plain || !event.submitter || event.submitter.name !== "preview") return;
  event.preventDefault();
  const button = event.submitter;
  preview(form, button).catch(() => {
    form.dataset.plain = "1";  // the page's own round trip, as without the script
    form.requestSubmit(button);
  });
});
