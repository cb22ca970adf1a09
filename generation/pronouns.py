"""The pronoun codebooks (docs/domain.md, 'Pronouns and codebooks'): one per dataset, because spellings differ between datasets.

Each dataset kind declares its codebook (generation/datasets/); everything else asks a `Codebook`.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Codebook:
    """A dataset's spellings: base -> form -> surface. The built-in kinds have the 4 bases of BASES; a `templates`
    dataset (docs/domain.md, 'Your own templates') brings its own families, in its codebook file's order, and a
    family may lack some forms."""

    dataset: str
    table: dict[str, dict[str, str]]  # base -> form -> surface

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
        """The (base, surface) candidates for a mask of this case, one per family, in codebook order (BASES for
        the built-in kinds)."""
        return [(base, self.surface(base, form)) for base in self.bases]

    @cached_property
    def omega(self) -> frozenset[str]:
        """Every surface form in the codebook (the heuristic's pronoun set)."""
        return frozenset(surface for forms in self.table.values() for surface in forms.values())

    @cached_property
    def base_of(self) -> dict[str, str]:
        """Surface form -> base. No surface form is shared between bases in any codebook."""
        return {surface: base for base, forms in self.table.items() for surface in forms.values()}

    def base_for(self, form: str, surface: str) -> str | None:
        surface = surface.lower()
        for base in self.bases:
            if self.table[base].get(form) == surface:
                return base
        return None
