"""Projects and their members, managed in the app: create a project (its creator becomes its
owner, in the same transaction, so a new project is never invisible to the one who made it), add
a member with a role, change a role, remove a member. Owners only — the views check the role;
these functions check what must hold whoever calls them (a project keeps at least one owner)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from traces.models import Membership, Project

ROLES = tuple(Membership.Role.values)


class MembershipRejected(ValueError):
    """Bad input for a project or member change; the message is shown to the user as is."""


def project_create(*, name: str, user) -> Project:  # type: ignore[no-untyped-def]
    """A project owned by ``user``; with ``user`` None (the CLI on an instance without a
    superuser) a project without members, which its caller must say."""
    name = (name or "").strip()
    if not name:
        raise MembershipRejected("a project needs a name")
    if len(name) > 100:
        raise MembershipRejected("a project name has at most 100 characters")
    try:
        with transaction.atomic():
            project = Project.objects.create(name=name, created_by=user)
            if user is not None:
                Membership.objects.create(project=project, user=user, role=Membership.Role.OWNER)
    except IntegrityError:
        # Names are unique across the instance; say so rather than which project holds it.
        raise MembershipRejected(f"the name {name!r} is taken; choose another") from None
    return project


def _role(role: str) -> str:
    if role not in ROLES:
        raise MembershipRejected(f"unknown role {role!r}; one of {', '.join(ROLES)}")
    return role


def member_add(*, project: Project, username: str, role: str) -> Membership:
    role = _role(role)
    username = (username or "").strip()
    if not username:
        raise MembershipRejected("name the user to add")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise MembershipRejected(
            f"no user named {username!r}: they need an account first (an administrator "
            "creates accounts in /admin/)"
        )
    if Membership.objects.filter(project=project, user=user).exists():
        raise MembershipRejected(f"{username} is already a member; change their role instead")
    return Membership.objects.create(project=project, user=user, role=role)


def _other_owners(membership: Membership) -> bool:
    return (
        Membership.objects.filter(project=membership.project, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def member_set_role(*, membership: Membership, role: str) -> Membership:
    role = _role(role)
    # Lock the project's owner rows so two owners demoting each other at once cannot leave none.
    list(
        Membership.objects.select_for_update().filter(
            project=membership.project, role=Membership.Role.OWNER
        )
    )
    if (
        membership.role == Membership.Role.OWNER
        and role != Membership.Role.OWNER
        and not _other_owners(membership)
    ):
        raise MembershipRejected(
            "a project keeps at least one owner; make someone else owner first"
        )
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def member_remove(*, membership: Membership) -> None:
    list(
        Membership.objects.select_for_update().filter(
            project=membership.project, role=Membership.Role.OWNER
        )
    )
    if membership.role == Membership.Role.OWNER and not _other_owners(membership):
        raise MembershipRejected("the last owner cannot be removed; make someone else owner first")
    membership.delete()
