"""``webhook add|list|remove|rotate``: webhook endpoints from the command line.

``webhook add --scope S --owner USER URL [--events k1,k2]`` prints the new
endpoint's secret once; ``webhook rotate ID`` prints the new one. The
operator acts on any endpoint; the owner must be a steward of the scope (or
a member, for its own challenges' outcomes), as on the console: the same
actions decide (``notifications.webhook.actions``).
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memories.store.errors import Forbidden, NotFound, Rejected
from memories.store.models import Scope
from notifications.webhook.actions import create_endpoint, remove_endpoint, rotate_secret
from notifications.webhook.models import Endpoint


class Command(BaseCommand):
    help = "Add, list, remove webhook endpoints, or rotate an endpoint's signing secret."

    def add_arguments(self, parser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        add = verbs.add_parser("add", help="Add an endpoint; its secret is printed once.")
        add.add_argument("url")
        add.add_argument("--scope", required=True, help="The scope's name.")
        add.add_argument("--owner", required=True, help="The account the endpoint belongs to.")
        add.add_argument(
            "--events", default="", help="Comma-separated event kinds (default: every kind)."
        )
        listing = verbs.add_parser("list", help="List endpoints (of one scope with --scope).")
        listing.add_argument("--scope", help="The scope's name.")
        remove = verbs.add_parser("remove", help="Remove an endpoint and its delivery log.")
        remove.add_argument("id")
        rotate = verbs.add_parser("rotate", help="Rotate an endpoint's secret (printed once).")
        rotate.add_argument("id")

    def handle(self, *args, verb: str, **options) -> None:
        try:
            getattr(self, f"handle_{verb}")(**options)
        except Rejected as refused:
            raise CommandError(f"{refused.field}: {refused.message}") from None
        except Forbidden as refused:
            raise CommandError(f"Refused: {refused}.") from None
        except NotFound:
            raise CommandError(f"There is no webhook endpoint {options.get('id')!r}.") from None

    def handle_add(self, *, url: str, scope: str, owner: str, events: str, **options) -> None:
        account = get_user_model().objects.filter(username=owner).first()
        if account is None:
            raise CommandError(f"There is no account named {owner!r}.")
        target = _scope(scope)
        endpoint, secret = create_endpoint(
            owner=account, scope=target, url=url, kinds=events.split(",")
        )
        self.stdout.write(f"Added webhook endpoint {endpoint.pk}: {endpoint.url} ({target.name}).")
        self.stdout.write("Its signing secret, shown this once (give it to the receiver):")
        self.stdout.write(secret)

    def handle_list(self, *, scope: str | None = None, **options) -> None:
        endpoints = Endpoint.objects.select_related("scope", "owner").order_by("id")
        if scope:
            endpoints = endpoints.filter(scope=_scope(scope))
        if not endpoints:
            self.stdout.write("No webhook endpoints.")
        for endpoint in endpoints:
            kinds = ",".join(endpoint.kinds) or "every kind"
            state = "active" if endpoint.active else f"disabled: {endpoint.disabled_reason}"
            self.stdout.write(
                f"{endpoint.pk}\t{endpoint.scope.name}\t{endpoint.owner.get_username()}"
                f"\t{endpoint.url}\t{kinds}\t{state}"
            )

    def handle_remove(self, *, id: str, **options) -> None:
        removed = remove_endpoint(actor=None, endpoint_id=id)
        self.stdout.write(f"Removed webhook endpoint {removed.pk}: {removed.url}.")

    def handle_rotate(self, *, id: str, **options) -> None:
        endpoint, secret = rotate_secret(actor=None, endpoint_id=id)
        self.stdout.write(
            f"Rotated the secret of webhook endpoint {endpoint.pk}; the previous one keeps"
            " signing beside it for the overlap. The new secret, shown this once:"
        )
        self.stdout.write(secret)


def _scope(name: str) -> Scope:
    found = Scope.objects.filter(name=name).first()
    if found is None:
        raise CommandError(f"There is no scope named {name!r}.")
    return found
