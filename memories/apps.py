from importlib import import_module

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    # Where memories.portability.exports finds this app's export sections (else <app>.portable).
    portable_module = "memories.portability.portable"

    def import_models(self) -> None:
        # Django imports <app>.models only; ours are the package memories.store.models.
        super().import_models()
        self.models_module = import_module("memories.store.models")

    def ready(self) -> None:
        # Every grant and revoke of stewardship, from any door, is audited.
        import_module("memories.store.stewardship").connect()
