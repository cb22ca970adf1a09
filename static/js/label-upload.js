// The pool page's label uploads (templates/annotation/_label_upload.html): the form goes to the API with the upload's
// progress shown; "Check and preview" shows the file's first rows and what the import would do (nothing written),
// "Import" writes it. Problems are listed as the server names them: the uploaded file's own name and line. Without
// this script the form posts to the page, which shows the same.
const form = document.querySelector("form.label-upload");

function cell(tag, text) {
  const element = document.createElement(tag);
  element.textContent = text === null || text === undefined ? "" : String(text);
  return element;
}

function show(result, body, preview) {
  result.replaceChildren();
  const errors = body.errors || [];
  if (errors.length || body.detail) {
    const reason = preview ? "This file would be refused" : body.detail || "Import failed, nothing was written";
    const heading = cell("div", `${reason}:`);
    heading.className = "error";
    heading.setAttribute("role", "alert");
    const list = document.createElement("ul");
    list.className = "errorlist import-errors";
    for (const error of errors.slice(0, 100)) {
      const item = document.createElement("li");
      item.append(cell("code", error));
      list.append(item);
    }
    if (errors.length > 100) list.append(cell("li", `... and ${errors.length} problems in all`));
    result.append(heading, list);
    return;
  }
  if (!preview) {
    const done = body.kind === "judge_labels"
      ? `${body.file}: judge run ${body.run} of ${body.judge} v${body.version}, ${body.labels} labels imported.`
      : `${body.file}: ${body.rows} labels by ${body.annotators} annotators: ${body.new} new, ${body.replaced} replaced, ${body.completed} completed, ${body.unchanged} already there.`;
    result.append(cell("p", done));
    return;
  }
  const summary = body.labels !== undefined && body.new === undefined
    ? `${body.labels} labels (${body.with_probabilities} with probabilities, ${body.with_confidence} with a confidence).`
    : `${body.new} new, ${body.replaced} replaced, ${body.completed} completed, ${body.unchanged} already there, by ${body.annotators} annotators.`;
  result.append(cell("p", `Nothing written yet. ${summary} Press Write labels to write it.`));
  const rows = body.rows || [];
  if (!rows.length) return;
  const table = document.createElement("table");
  table.className = "label-upload-preview";
  const head = document.createElement("tr");
  for (const key of Object.keys(rows[0])) {
    const th = cell("th", key);
    th.scope = "col";
    head.append(th);
  }
  table.createTHead().append(head);
  const tbody = table.createTBody();
  for (const row of rows) {
    const line = document.createElement("tr");
    for (const value of Object.values(row)) line.append(cell("td", value));
    tbody.append(line);
  }
  const scroll = document.createElement("div");
  scroll.className = "table-scroll";
  scroll.append(table);
  result.append(scroll);
}

if (form) {
  const result = form.querySelector(".label-upload-result");
  const progress = form.querySelector(".label-upload-progress");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const preview = event.submitter && event.submitter.name === "preview";
    const data = new FormData(form);
    data.delete("preview");
    data.set("preview", preview ? "true" : "false");
    for (const flag of ["wide", "replace"]) data.set(flag, form.elements[flag].checked ? "true" : "false");
    const request = new XMLHttpRequest();
    request.open("POST", form.dataset.api);
    request.setRequestHeader("X-CSRFToken", form.elements.csrfmiddlewaretoken.value);
    request.setRequestHeader("Accept", "application/json");
    progress.hidden = false;
    progress.value = 0;
    request.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) progress.value = Math.round((100 * e.loaded) / e.total);
    });
    request.addEventListener("load", () => {
      progress.hidden = true;
      let body;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = { detail: `the server answered ${request.status}`, errors: [] };
      }
      if (request.status === 400 && body.files) body = { detail: "choose one file", errors: [] };
      show(result, body, preview && request.status === 200);
    });
    request.addEventListener("error", () => {
      progress.hidden = true;
      show(result, { detail: "the upload was interrupted; nothing was written", errors: [] }, false);
    });
    request.send(data);
  });
}
