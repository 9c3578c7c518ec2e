"""A small HTML reader for page tests: assert on an element's text, not on a
substring of the whole page ("reachable" is in "unreachable", "15" is in
almost any page). Python's html.parser only; no new packages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The element's text with whitespace collapsed, as a reader sees it."""
        parts = [c if isinstance(c, str) else c.text for c in self.children]
        return " ".join(" ".join(parts).split())

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        """Descendants with this tag (any when None) whose attributes include `attrs`
        (class_ matches one of the element's classes)."""
        wanted_class = attrs.pop("class_", None)
        return [e for e in self.iter()
                if (tag is None or e.tag == tag)
                and all(e.attrs.get(k) == v for k, v in attrs.items())
                and (wanted_class is None or wanted_class in e.attrs.get("class", "").split())]

    def find(self, tag: str | None = None, **attrs: str) -> Element:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag or '*'}> with {attrs} on the page"
        return found[0]

    def rows(self) -> list[list[str]]:
        """A table's body rows as lists of cell texts."""
        return [[cell.text for cell in row.find_all("td")]
                for row in self.find_all("tr") if row.find_all("td")]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag) -> None:
        # Close up to the matching tag; a stray end tag is ignored, as browsers do.
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data) -> None:
        self.stack[-1].children.append(data)


def parse(page: str | bytes) -> Element:
    builder = _Builder()
    builder.feed(page.decode() if isinstance(page, bytes) else page)
    builder.close()
    return builder.root
