// How the annotation page cuts a generated text into markable words, and how it counts characters.
// Pure functions, no DOM: the page imports them, and the browser tests call them directly.
//
// Offsets are Unicode code points (docs/domain.md, "The annotation schema"): what Python's len() counts on the
// server. JavaScript strings count UTF-16 units, in which an emoji or any other character outside the Basic
// Multilingual Plane is two units, so every offset that leaves this module has been converted.

// Bidirectional controls reorder what follows them on screen: the page shows them as visible markers instead.
export const BIDI_CONTROL = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

// A word: a letter or digit, then letters, digits, combining marks (e + U+0301 stays one word), apostrophes and
// hyphens, and joiners between letters (ZWJ/ZWNJ inside Indic and Persian words). An emoji with its modifiers and
// ZWJ-joined parts (a family, a profession) is one markable word too: it can be gendered language.
const LETTER_WORD = String.raw`[\p{L}\p{N}](?:[\p{L}\p{N}\p{M}'’\-]|[\u200C\u200D](?=[\p{L}\p{N}\p{M}]))*`;
const EMOJI_PART = String.raw`\p{Extended_Pictographic}[\uFE0E\uFE0F\p{Emoji_Modifier}\p{M}]*`;
const EMOJI_WORD = `${EMOJI_PART}(?:\\u200D${EMOJI_PART})*`;
const PIECE = new RegExp(`(${LETTER_WORD}|${EMOJI_WORD})|(${BIDI_CONTROL.source})`, "gu");

// codePoints[u] = how many code points come before UTF-16 index u (for every u from 0 to text.length).
export function codePointIndex(text) {
  const index = new Uint32Array(text.length + 1);
  let points = 0;
  for (let unit = 0; unit < text.length; unit += 1) {
    index[unit] = points;
    const code = text.charCodeAt(unit);
    if (code >= 0xd800 && code <= 0xdbff && unit + 1 < text.length) {
      const low = text.charCodeAt(unit + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        unit += 1;
        index[unit] = points; // the middle of a pair belongs to the character it completes
      }
    }
    points += 1;
  }
  index[text.length] = points;
  return index;
}

// The text sliced by code points, as Python's text[start:end] does.
export function sliceCodePoints(text, start, end) {
  return Array.from(text).slice(start, end).join("");
}

// Visible name of a control character, e.g. "⟨U+202E⟩".
export function controlMarker(char) {
  return `⟨U+${char.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`;
}

// The text as pieces in order: {kind: "word" | "text" | "control", text, start, end}, with start and end in code points.
export function pieces(text) {
  const points = codePointIndex(text);
  const out = [];
  let at = 0;
  for (const match of text.matchAll(PIECE)) {
    if (match.index > at) out.push(piece("text", text, at, match.index, points));
    out.push(piece(match[1] ? "word" : "control", text, match.index, match.index + match[0].length, points));
    at = match.index + match[0].length;
  }
  if (at < text.length) out.push(piece("text", text, at, text.length, points));
  return out;
}

function piece(kind, text, from, to, points) {
  return { kind, text: text.slice(from, to), start: points[from], end: points[to] };
}

// The words only, as [start, end] code-point spans with their text.
export function words(text) {
  return pieces(text).filter((p) => p.kind === "word");
}
