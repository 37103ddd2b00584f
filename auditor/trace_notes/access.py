"""Who may read and write a trace's tags and comments, by project role (traces.selectors.role_of:
owner, annotator, viewer, or "uploader" for a project token).

Comments are hidden from annotators entirely: a comment is free text and may say how an item
they have open was decided (which side is the agent's, what the policies found), which their
blind annotation must not see. Tags are short labels, readable by every member; owners and
annotators write them, viewers only read."""

from __future__ import annotations

TAG_WRITERS = ("owner", "annotator", "uploader")  # a token's own scope check decides writes
COMMENT_READERS = ("owner", "viewer", "uploader")
COMMENT_WRITERS = ("owner",)


def can_read_tags(role: str | None) -> bool:
    return role is not None


def can_write_tags(role: str | None) -> bool:
    return role in TAG_WRITERS


def can_read_comments(role: str | None) -> bool:
    return role in COMMENT_READERS


def can_write_comments(role: str | None) -> bool:
    return role in COMMENT_WRITERS


def why_not(role: str | None, what: str) -> str:
    """The sentence a refused member reads."""
    if role == "viewer":
        return f"viewers read traces but do not change them; ask an owner to {what} for you"
    if role == "annotator" and what.endswith("comment"):
        return "annotators do not see comments, so their annotation stays blind"
    if role == "uploader" and what.endswith("comment"):
        return "project tokens read comments; people signed in as owners write them"
    return f"you may not {what} in this project"
