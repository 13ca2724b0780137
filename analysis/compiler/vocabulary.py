"""The curated vocabulary (paper section 3: a manually constructed vocabulary maps source
verb classes to executable action types; ``vocabulary.yaml``) and the executor's type
hierarchy.

Maps entity stems / noun classes / categories onto the executor's leaf types, fixture
head nouns onto fixture types, step-text cues onto verb classes and verb classes onto
action types. ``docs/vocabulary.md`` renders the same tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from analysis.executor.rules import is_subtype

VOCAB_PATH = Path(__file__).with_name("vocabulary.yaml")
RULES_PATH = Path(__file__).resolve().parents[1] / "executor" / "rules.yaml"


def load_rules(path: Path = RULES_PATH) -> dict:
    """The executor's rules as plain data (the same file the executor reads)."""
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@dataclass(frozen=True)
class Vocabulary:
    data: dict
    rules: dict

    @classmethod
    def load(cls, vocab_path: Path = VOCAB_PATH, rules_path: Path = RULES_PATH) -> "Vocabulary":
        with open(vocab_path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        rules = load_rules(rules_path)
        vocab = cls(data, rules)
        vocab.validate(str(vocab_path))
        return vocab

    # ------------------------------------------------------------------ types
    @cached_property
    def types(self) -> dict:
        return dict(self.rules["types"])

    def is_a(self, leaf: str, parent: str) -> bool:
        """Is ``leaf`` the type ``parent`` or one of its subtypes?"""
        return is_subtype(self.types, leaf, parent)

    def validate(self, where: str) -> None:
        """Every type named in the vocabulary exists in rules.yaml; every action type too."""
        known = set(self.types)
        for section in ("noun_types", "category_types", "fixture_types"):
            for key, leaf in self.data[section].items():
                if leaf not in known:
                    raise ValueError(f"{where}: {section}.{key}: type {leaf!r} not in rules.yaml")
        heads = self.data.get("ingredient_heads", {})
        for section in ("fresh", "whole"):
            for key, leaf in heads.get(section, {}).items():
                if leaf not in known:
                    raise ValueError(f"{where}: ingredient_heads.{section}.{key}: type {leaf!r} not in rules.yaml")
        if heads and heads.get("ground_type") not in known:
            raise ValueError(f"{where}: ingredient_heads.ground_type: type {heads.get('ground_type')!r} "
                             "not in rules.yaml")
        for key, (_, leaf) in self.data["step_fixtures"].items():
            if leaf not in known:
                raise ValueError(f"{where}: step_fixtures.{key}: type {leaf!r} not in rules.yaml")
        actions = set(self.rules["actions"])
        for verb, types in self.data["verbs"].items():
            for t in types:
                if t not in actions:
                    raise ValueError(f"{where}: verbs.{verb}: action type {t!r} not in rules.yaml")
        for verb, by_kind in self.data["snippet_verbs"].items():
            for kind, t in by_kind.items():
                if kind not in known:
                    raise ValueError(f"{where}: snippet_verbs.{verb}: type {kind!r} not in rules.yaml")
                if t not in actions:
                    raise ValueError(f"{where}: snippet_verbs.{verb}: action type {t!r} not in rules.yaml")
        for kind, leaves in self.data.get("container_kinds", {}).items():
            for leaf in leaves:
                if leaf not in known or not self.is_a(leaf, "container"):
                    raise ValueError(f"{where}: container_kinds.{kind}: {leaf!r} is no container type of rules.yaml")
        for kind in self.data["snippet_fixtures"]:
            if kind not in known:
                raise ValueError(f"{where}: snippet_fixtures.{kind}: type {kind!r} not in rules.yaml")

    # ------------------------------------------------------------------ lookups
    def item_type(self, stem_base: str, class_key: str | None, category: str | None) -> tuple[str, str]:
        """``(leaf type, rule)`` for an object: by stem, then class key, then category."""
        nt = self.data["noun_types"]
        if stem_base in nt:
            return nt[stem_base], f"noun_types:{stem_base}"
        if class_key and class_key in nt:
            return nt[class_key], f"noun_types:{class_key}"
        ct = self.data["category_types"]
        if category and category in ct:
            return ct[category], f"category_types:{category}"
        return "other_supply", "category_types:default"

    def fixture_type(self, head: str) -> tuple[str, str]:
        ft = self.data["fixture_types"]
        if head in ft:
            return ft[head], f"fixture_types:{head}"
        return ft["default"], "fixture_types:default"

    def default_location_kinds(self, leaf: str) -> tuple[list[str], str]:
        """Fixture types to try, in order, for an object of type ``leaf`` with no observed place."""
        dl = self.data["default_locations"]
        t = leaf
        while t is not None:
            if t in dl:
                return list(dl[t]), f"default_locations:{t}"
            t = self.types.get(t)
        return list(dl["default"]), "default_locations:default"

    @property
    def ingredient_heads(self) -> dict:
        """The ``ingredient_heads`` section: ``fresh`` and ``whole`` head nouns ->
        leaf type, ``ground_qualifiers`` and ``ground_type`` (see vocabulary.yaml)."""
        return dict(self.data.get("ingredient_heads", {}))

    @property
    def overrides(self) -> dict:
        return dict(self.data["nouns"])

    @property
    def step_cues(self) -> dict:
        return dict(self.data["step_cues"])

    @property
    def step_fixtures(self) -> dict:
        return dict(self.data["step_fixtures"])

    @property
    def verbs(self) -> dict:
        return dict(self.data["verbs"])

    @property
    def snippet_verbs(self) -> dict:
        return dict(self.data["snippet_verbs"])

    def container_kind(self, leaf: str) -> frozenset:
        """The container leaf types of one kind with ``leaf`` (``container_kinds``; itself
        alone when listed in none).

        >>> v = Vocabulary.load()
        >>> sorted(v.container_kind("bag")), sorted(v.container_kind("jar"))
        (['bag', 'packet'], ['jar'])
        """
        for leaves in self.data.get("container_kinds", {}).values():
            if leaf in leaves:
                return frozenset(leaves)
        return frozenset({leaf})

    @property
    def snippet_fixtures(self) -> dict:
        return dict(self.data["snippet_fixtures"])
