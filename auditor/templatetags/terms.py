"""`{% term "delta" %}`: a statistics term with its plain-language definition
(`auditor.runs.glossary`) shown on hover, on keyboard focus and on tap.

The definition is the element's ``data-def`` (static/css/runs.css draws it as a tooltip on
:hover and :focus; tabindex 0 makes it reachable by Tab and focused by a tap) and, for screen
readers, its ``aria-describedby`` names the entry of the page's glossary."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from auditor.runs.glossary import TERMS
from auditor.runs.glossary import term as glossary_term

register = template.Library()


@register.simple_tag
def term(key: str, label: str | None = None) -> SafeString:
    shown, definition = glossary_term(key)
    return format_html(
        '<span class="term" tabindex="0" data-term="{}" data-def="{}" '
        'aria-describedby="def-{}">{}</span>',
        key,
        definition,
        key,
        label if label is not None else shown,
    )


@register.simple_tag
def glossary() -> list[tuple[str, tuple[str, str]]]:
    """Every term with its label and definition, in the glossary's order."""
    return list(TERMS.items())
