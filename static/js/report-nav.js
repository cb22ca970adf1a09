// The report page: a table of contents with a link per section, that marks the section being read (a sticky column
// at desktop widths, a folded "Contents" bar on a phone), and sections that fold. Which sections are folded is kept
// in the address (?collapsed=accuracy,judges), so that a reload or a shared link shows the same page.
const WIDE = window.matchMedia("(min-width: 56.25rem)");
const PARAM = "collapsed";

const body = document.getElementById("report-body");
const toc = document.getElementById("report-toc");

function foldedInAddress() {
  const value = new URL(window.location.href).searchParams.get(PARAM);
  return new Set(value ? value.split(",").filter(Boolean) : []);
}

function keepInAddress(sections) {
  const url = new URL(window.location.href);
  const folded = sections.filter((section) => section.classList.contains("collapsed")).map((section) => section.id);
  if (folded.length) url.searchParams.set(PARAM, folded.join(","));
  else url.searchParams.delete(PARAM);
  window.history.replaceState(window.history.state, "", url);
}

function fold(section, folded) {
  section.classList.toggle("collapsed", folded);
  const button = section.querySelector(":scope > h2 > .section-toggle");
  button.setAttribute("aria-expanded", String(!folded));
  button.textContent = folded ? "Show" : "Hide";
  button.setAttribute("aria-label", `${folded ? "Show" : "Hide"} ${section.dataset.title}`);
}

if (body && toc) {
  const sections = [...body.querySelectorAll(":scope > section[id]")].filter((s) => s.querySelector(":scope > h2"));
  const list = toc.querySelector("ol");
  const details = toc.querySelector("details");
  const links = new Map();
  const folded = foldedInAddress();
  for (const section of sections) {
    const heading = section.querySelector(":scope > h2");
    section.dataset.title = heading.textContent.trim();
    const link = Object.assign(document.createElement("a"), { href: `#${section.id}`, textContent: section.dataset.title });
    link.addEventListener("click", () => {
      if (section.classList.contains("collapsed")) {
        fold(section, false);
        keepInAddress(sections);
      }
      if (!WIDE.matches) details.open = false;
    });
    const item = document.createElement("li");
    item.append(link);
    list.append(item);
    links.set(section, link);

    const button = Object.assign(document.createElement("button"), { type: "button", className: "section-toggle secondary" });
    button.setAttribute("aria-controls", section.id);
    button.addEventListener("click", () => {
      fold(section, !section.classList.contains("collapsed"));
      keepInAddress(sections);
    });
    heading.append(button);
    fold(section, folded.has(section.id));
  }
  details.open = WIDE.matches;
  WIDE.addEventListener("change", () => { details.open = WIDE.matches; });
  toc.hidden = false;

  // The section being read: the last one whose top has passed the upper third of the window.
  const mark = () => {
    let current = sections[0];
    for (const section of sections) if (section.getBoundingClientRect().top < window.innerHeight / 3) current = section;
    for (const [section, link] of links) {
      if (section === current) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
  };
  let pending = false;
  window.addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(() => { pending = false; mark(); });
  }, { passive: true });
  mark();
}
