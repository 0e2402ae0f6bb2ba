"""Request and response bodies of the HTTP API (separate models: what comes in is not what goes out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    model_validator,
)

from corrector import Correction, config

MAX_LIST = 1000  # words of a request's protect, pairs of its confusions (a server-wide list: --protect-file)
Word = Annotated[str, StringConstraints(min_length=1, max_length=100)]


def max_json_values(max_texts: int) -> int:
    """The most JSON values a legal request can hold, with room to spare: the object and each setting's value,
    the texts, each word list (protect, terms) of MAX_LIST words and MAX_LIST confusion pairs (a list and two
    characters each).
    ``errors.BodyGuardMiddleware`` refuses a body that holds more before parsing it."""
    lists = len(config.WORD_LISTS) * (1 + MAX_LIST)
    return 1 + 2 * len(config.SETTINGS) + 2 + max_texts + lists + (1 + 3 * MAX_LIST) + 256
Char = Annotated[str, StringConstraints(min_length=1, max_length=1)]
Pair = Annotated[list[Char], Field(min_length=2, max_length=2)]


def _whole(value: Any) -> Any:
    """A float without a fractional part is that integer, as in JSON Schema (``5.0`` is the integer 5);
    anything else is left for the strict integer check (``2.5``, ``"5"`` and ``true`` are not integers)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _at_most(limit: int) -> BeforeValidator:
    """A list longer than ``limit`` is refused before any of its items is validated (each would cost an error)."""
    def check(value: Any) -> Any:
        if isinstance(value, list) and len(value) > limit:
            raise ValueError(f"at most {limit} items, not {len(value)}")
        return value

    return BeforeValidator(check)


_JSON_TYPES = {dict: "an object", list: "a list", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def _strings(value: Any) -> Any:
    """A list whose items are not all strings is refused with one error, the first such item's, instead of one
    error per item (a 2 MiB body of ``{}`` would make half a million)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise ValueError(f"item {i} is {_JSON_TYPES.get(type(item), type(item).__name__)}, not a string")
    return value


def _frozen(value: Any) -> Any:
    """Lists become tuples (hashable, as CorrectorConfig stores them)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


@dataclass(frozen=True)
class CorrectOptions:
    """A request's decoding settings as sorted (CorrectorConfig name, value) pairs; hashable, so requests
    share a model call only when these are equal. ``CorrectOptions.of(threshold=0.6)``."""

    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, **settings: Any) -> CorrectOptions:
        return cls(tuple(sorted((k, _frozen(v)) for k, v in settings.items() if v is not None)))

    def as_kwargs(self) -> dict[str, Any]:
        return dict(self.settings)


class _Settings(BaseModel):
    """Decoding settings of ``corrector/config.py``; absent = the server's.

    Types are strict (``"0.5"`` is not a number, ``"no"`` is not a boolean; a whole float is that integer, as in
    JSON Schema); ranges are checked here, and whatever depends on the model (e.g. a confusion pair) by the
    corrector, as a 422 too."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    def settings(self) -> dict[str, Any]:
        """The settings given (CorrectorConfig names), as plain values."""
        return {name: getattr(self, name) for name in type(self).model_fields
                if name in config.SETTINGS and getattr(self, name) is not None}


def _field(name: str) -> tuple[Any, Any]:
    """The request field of a decoding setting, from its declaration (type, bounds, doc)."""
    kind, (lo, hi) = config.KINDS[name], config.bounds(name)
    extra: dict[str, Any] = {}
    if name in config.WORD_LISTS:
        kind, extra = Annotated[list[Word], _at_most(MAX_LIST)], {"max_length": MAX_LIST}
    elif name == "confusions":
        kind, extra = Annotated[list[Pair], _at_most(MAX_LIST)], {"max_length": MAX_LIST, "examples": [[["己", "已"]]]}
    elif kind is int:  # the one rule for every integer field (bounds inside: the JSON Schema has them)
        kind = Annotated[Annotated[int, Field(ge=lo, le=hi)], BeforeValidator(_whole)]
    elif kind is float:
        kind = Annotated[float, Field(ge=lo, le=hi)]
    return kind | None, Field(default=None, description=config.doc(name), **extra)


if TYPE_CHECKING:
    class DecodingSettings(_Settings): ...

    class ServerDecodingSettings(DecodingSettings): ...
else:  # each setting from its one declaration in corrector/config.py
    DecodingSettings = create_model(
        "DecodingSettings", __base__=_Settings, __doc__="Every decoding setting a request may change.",
        **{name: _field(name) for name in config.request_settings()})
    ServerDecodingSettings = create_model(  # --corrector-settings
        "ServerDecodingSettings", __base__=DecodingSettings,
        __doc__="The per-request settings plus the resource ones a client may not choose.",
        **{name: _field(name) for name in config.SETTINGS if name not in config.request_settings()})


def _request_schema(schema: dict[str, Any]) -> None:
    """Document the contract: ``text`` is a string, ``texts`` a list, and exactly one of them is given."""
    props = schema["properties"]
    for name in ("text", "texts"):
        prop = props[name]
        [not_null] = [s for s in prop.pop("anyOf") if s.get("type") != "null"]
        prop.pop("default", None)
        prop.update(not_null)
    schema["oneOf"] = [{"required": ["text"]}, {"required": ["texts"]}]


class CorrectRequest(DecodingSettings):
    """Exactly one of ``text`` or ``texts``; the decoding settings apply to every text of the request."""

    model_config = ConfigDict(
        extra="forbid", strict=True, allow_inf_nan=False,
        json_schema_extra=_request_schema,
    )

    text: str | None = Field(default=None, description="one text to correct", examples=["今天天汽很好"])
    texts: Annotated[list[str], BeforeValidator(_strings)] | None = Field(
        default=None, description="several texts, corrected together")

    @model_validator(mode="after")
    def _one_of_text_or_texts(self) -> CorrectRequest:
        for name in ("text", "texts"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"'{name}' must not be null")
        if (self.text is None) == (self.texts is None):
            raise ValueError("give exactly one of 'text' (a string) or 'texts' (a list of strings)")
        return self

    def items(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.texts or [])

    def options(self) -> CorrectOptions:
        settings = self.settings()
        for name in config.WORD_LISTS:  # order and repeats do not matter
            if name in settings:
                settings[name] = sorted(set(settings[name]))
        return CorrectOptions.of(**settings)


DECODING_NAMES = frozenset(DecodingSettings.model_fields)


class EditOut(BaseModel):
    position: int = Field(description="index of the character in the input text (Unicode code points)")
    source: str = Field(description="the character found there")
    target: str = Field(description="the character it becomes")
    confidence: float = Field(ge=0.0, le=1.0)
    reason: Literal["pinyin", "shape", "other", "script"] = Field(
        description="similar sound, similar shape, neither, or a stray traditional character in simplified text")


class CorrectionOut(BaseModel):
    source: str
    target: str = Field(description="the corrected text; always as long as the source")
    edits: list[EditOut]

    @classmethod
    def from_correction(cls, c: Correction) -> CorrectionOut:
        return cls.model_validate(c.to_dict())


class CorrectResponse(BaseModel):
    model: str = Field(description="name of the model bundle")
    version: str = Field(description="version of the model bundle")
    results: list[CorrectionOut] = Field(description="one per input text, in order")


class ErrorResponse(BaseModel):
    detail: str | list[dict[str, Any]]


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyResponse(BaseModel):
    status: Literal["ready", "not ready"]
    model: str | None = None
    version: str | None = None
    provider: str | None = Field(default=None, description="ONNX Runtime execution provider in use")
    precision: str | None = Field(default=None, description="ONNX graphs in use: fp32 or int8")
