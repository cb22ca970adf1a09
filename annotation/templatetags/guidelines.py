"""`{% load guidelines %}`: a pool's guidelines, Markdown rendered to HTML that cannot run or fetch anything.

markdown-it-py renders CommonMark (tables and strikethrough on) with raw HTML turned off, so a tag written in the text
shows as text; nh3 then keeps only the tags and attributes that Markdown makes, and only http(s) and mailto links.
Images are left out: an annotator's page loads nothing from an address a guideline names."""

from __future__ import annotations

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p", "pre",
    "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
# No style attributes (a table column's alignment): the site's content security policy allows none.
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}


@register.filter(is_safe=True)
def markdown(text: str) -> SafeString:
    """The Markdown `text` as clean HTML; links open in a new tab without telling the target where they came from."""
    html = _MARKDOWN.render(text or "")
    cleaned = nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
    return mark_safe(cleaned)  # noqa: S308  # cleaned by nh3 just above
