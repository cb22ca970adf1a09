"""The pronoun codebooks (docs/domain.md, 'Pronouns and codebooks'): one per dataset, because spellings differ between datasets.

Each dataset kind declares its codebook (generation/datasets/); everything else asks a `Codebook`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

BASES: tuple[str, ...] = ("he", "she", "they", "xe")
FORMS: tuple[str, ...] = ("nom", "acc", "pos_dep", "pos_ind", "ref")
FORM_LABELS = {
    "nom": "nominative",
    "acc": "accusative",
    "pos_dep": "dependent possessive",
    "pos_ind": "independent possessive",
    "ref": "reflexive",
}


# English clitics a form may carry on `templates` and free-text datasets (docs/domain.md, "Bring your own study"):
# "ey'll", "xe’d", "fae's" count as ey, xe, fae. Straight and curly apostrophes alike.
_CLITIC = re.compile(r"^(.+?)['’](?:s|d|ll|re|ve|m)$")


@dataclass(frozen=True)
class Codebook:
    """A dataset's spellings: base -> form -> surface. The built-in kinds have the 4 bases of BASES; a `templates`
    dataset (docs/domain.md, 'Your own templates') brings its own families, in its codebook file's order, and a
    family may lack some forms. A spelling may belong to several families (e and ey both have `em`).

    `clitics`: a token made of a form and an English clitic counts as that form (templates and free-text datasets;
    never the paper's three, whose heuristic stays the seed's)."""

    dataset: str
    table: dict[str, dict[str, str]]  # base -> form -> surface
    clitics: bool = False

    @cached_property
    def bases(self) -> tuple[str, ...]:
        """The families in codebook order (BASES for the built-in kinds): the candidates' order."""
        return tuple(self.table)

    def surface(self, base: str, form: str) -> str:
        try:
            return self.table[base][form]
        except KeyError:
            raise KeyError(f"{self.dataset} has no {form!r} form for {base!r}") from None

    @cached_property
    def forms(self) -> tuple[str, ...]:
        """The forms any family has, in FORMS order."""
        return tuple(form for form in FORMS if any(form in forms for forms in self.table.values()))

    def candidates(self, form: str) -> list[tuple[str, str]]:
        """The (base, surface) candidates for a mask of this case: the distinct spellings of the form, in codebook
        order, each under the first family that has it (one per family where no spelling is shared, as in the
        built-in kinds). A prediction is correct when its spelling is the ground-truth family's."""
        seen: set[str] = set()
        candidates = []
        for base in self.bases:
            surface = self.surface(base, form)
            if surface not in seen:
                seen.add(surface)
                candidates.append((base, surface))
        return candidates

    @cached_property
    def omega(self) -> frozenset[str]:
        """Every surface form in the codebook (the heuristic's pronoun set)."""
        return frozenset(surface for forms in self.table.values() for surface in forms.values())

    @cached_property
    def bases_of(self) -> dict[str, frozenset[str]]:
        """Surface form -> every family that has it."""
        owners: dict[str, set[str]] = {}
        for base, forms in self.table.items():
            for surface in forms.values():
                owners.setdefault(surface, set()).add(base)
        return {surface: frozenset(bases) for surface, bases in owners.items()}

    @cached_property
    def base_of(self) -> dict[str, str]:
        """Surface form -> the first family (in codebook order) that has it; the only one in the built-in kinds."""
        first: dict[str, str] = {}
        for base, forms in self.table.items():
            for surface in forms.values():
                first.setdefault(surface, base)
        return first

    def pronoun_in(self, token: str) -> str | None:
        """The form a lower-cased token counts as (itself, or with `clitics` the form before an English clitic), or
        None when it is no form of the codebook."""
        if token in self.omega:
            return token
        if self.clitics:
            match = _CLITIC.match(token)
            if match is not None and match.group(1) in self.omega:
                return match.group(1)
        return None

    def base_for(self, form: str, surface: str) -> str | None:
        surface = surface.lower()
        for base in self.bases:
            if self.table[base].get(form) == surface:
                return base
        return None
