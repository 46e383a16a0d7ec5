"""The embedding service: profiles, query and document vectors, and caller-supplied vectors.

Search asks it for a query's vector in a profile; the embed job asks it for drawers' vectors;
`PUT /api/drawers/{id}/embedding` attaches a caller's vector through it. Every vector it hands
out or stores is float32 and L2-normalised, of its profile's dimensions, so similarity is a dot
product.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from kernel.clock import utc_now
from kernel.config import EmbeddingsConfig
from kernel.context import RequestContext
from kernel.errors import EmbedNotConfigured, InputInvalid
from kernel.profiles import Profile
from kernel.validation import body_object, parse_uuid, refuse_unknown
from palace.embeddings import providers
from palace.embeddings.repository import EmbeddingRepository
from palace.embeddings.shapes import EmbeddingAttached
from palace.hierarchy import DrawerNotFound

ATTACH_FIELDS = ("profile", "embedding", "requested_by")


class EmbeddingService:
    def __init__(
        self,
        repository: EmbeddingRepository,
        config: EmbeddingsConfig | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        config = config or EmbeddingsConfig()
        self.profiles: dict[str, Profile] = dict(config.profiles)
        self.default: Profile | None = (
            self.profiles[config.default_profile] if config.default_profile else None
        )
        self._repository = repository
        self.clock = clock
        self._providers: dict[str, providers.Provider] = {}
        self._lock = threading.Lock()

    # Profiles.

    def profile(self, name: str | None, field: str = "profile") -> Profile:
        """The named profile; None (or an empty name) is the default profile."""
        if name is None or name == "":
            if self.default is None:
                raise EmbedNotConfigured(
                    "no default embedding profile is configured ([embeddings] default_profile "
                    "is empty)"
                )
            return self.default
        configured = ", ".join(sorted(self.profiles))
        if not isinstance(name, str):
            raise InputInvalid(
                field, f"must be the name of a configured embedding profile ({configured})"
            )
        if name not in self.profiles:
            raise InputInvalid(
                field,
                f"names no configured embedding profile: {name!r} is not one of {configured}",
            )
        return self.profiles[name]

    def embedding_profile(self) -> Profile:
        """The default profile, for embedding drawers: it must be able to embed."""
        profile = self.profile(None)
        if not profile.can_embed:
            raise EmbedNotConfigured(
                f"the default embedding profile {profile.name!r} is external: its vectors come "
                "only from callers (PUT /api/drawers/{id}/embedding)"
            )
        return profile

    def provider(self, profile: Profile) -> providers.Provider:
        if not profile.can_embed:
            raise EmbedNotConfigured(
                f"the embedding profile {profile.name!r} is external: the daemon cannot embed "
                "text in it; send a vector of your own with the profile"
            )
        with self._lock:
            found = self._providers.get(profile.name)
            if found is None:
                found = self._providers[profile.name] = providers.for_profile(profile)
            return found

    # Vectors.

    def embed_query(self, profile: Profile, text: str) -> np.ndarray:
        """The query's vector (float32, unit length); `EmbedFailed` when the provider fails."""
        return self.provider(profile).embed_query(text)

    def embed_documents(self, profile: Profile, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's vectors, an array of (windows, dimensions) per text."""
        return self.provider(profile).embed_documents(texts)

    def check_vector(self, profile: Profile, raw: object, field: str) -> np.ndarray:
        """A caller's vector: a list of exactly `profile.dimensions` finite numbers, not all
        zero. Returned L2-normalised as float32."""
        expected = profile.dimensions
        if not isinstance(raw, list):
            raise InputInvalid(
                field,
                f"must be a list of {expected} numbers (the dimensions of profile "
                f"{profile.name!r})",
            )
        if len(raw) != expected:
            raise InputInvalid(
                field,
                f"has {len(raw)} numbers; profile {profile.name!r} has {expected} dimensions",
            )
        for index, value in enumerate(raw):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (isinstance(value, float) and not math.isfinite(value))
            ):
                raise InputInvalid(
                    field, f"must hold only finite numbers (item {index} is {value!r})"
                )
        try:
            vector = providers.normalised(np.array([raw], dtype=np.float64))
        except OverflowError:  # an integer beyond any float
            vector = None
        if vector is None:
            if not any(raw):
                raise InputInvalid(field, "is all zeros: it has no direction to compare")
            raise InputInvalid(field, "must hold only finite numbers")
        return vector[0]

    # Caller-supplied document vectors.

    def attach(self, ctx: RequestContext, drawer_id: str, body: object) -> dict[str, Any]:
        """`PUT /api/drawers/{id}/embedding`: store (or replace) a drawer's vector in a profile.

        The profile must be named: a vector of unknown provenance is never stored."""
        ctx.require_write("attach_embedding")
        data = body_object(body)
        refuse_unknown(data, ATTACH_FIELDS)
        name = data.get("profile")
        if name is None or name == "":
            raise InputInvalid(
                "profile",
                "is required: name the configured embedding profile the vector belongs to "
                f"(configured: {', '.join(sorted(self.profiles))})",
            )
        profile = self.profile(name)
        if "embedding" not in data:
            raise InputInvalid("embedding", f"is required: a list of {profile.dimensions} numbers")
        vector = self.check_vector(profile, data["embedding"], "embedding")
        drawer = parse_uuid(drawer_id, "id")
        provenance = profile.provenance()
        written = self._repository.put(
            [(drawer, vector[None, :])], profile.name, provenance, self.clock()
        )
        if drawer not in written:
            raise DrawerNotFound(f"drawer {drawer_id!r} does not exist")
        return EmbeddingAttached.render(
            {
                "drawer": drawer,
                "profile": profile.name,
                "dimensions": profile.dimensions,
                "provenance": provenance,
            }
        )

    def store_vectors(self, profile: Profile, vectors: Mapping[str, np.ndarray]) -> set[str]:
        """Store drawers' vectors made in `profile`; returns the drawers that still existed."""
        return self._repository.put(
            list(vectors.items()), profile.name, profile.provenance(), self.clock()
        )

    # What the embed job reads.

    def missing(self, profile: Profile, wing_id: str | None) -> list[str]:
        """The drawers of wing `wing_id` (of the palace with None), current and superseded,
        without a vector in `profile`, oldest `created_at` first."""
        done = self._repository.embedded(profile.name)
        return self._repository.oldest_first(
            drawer for drawer in self._repository.drawer_ids(wing_id) if drawer not in done
        )

    def contents(self, drawer_ids: Sequence[str]) -> dict[str, str]:
        """The content of each of the drawers that still exist, by id."""
        return self._repository.contents(drawer_ids)
