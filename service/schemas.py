"""Request and response bodies of the HTTP API (separate models: what comes in is not what goes out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from corrector import Correction

Word = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Char = Annotated[str, StringConstraints(min_length=1, max_length=1)]
Pair = Annotated[list[Char], Field(min_length=2, max_length=2)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]


def _whole(value: Any) -> Any:
    """A float without a fractional part is that integer, as in JSON Schema (``5.0`` is the integer 5);
    anything else is left for the strict integer check (``2.5``, ``"5"`` and ``true`` are not integers)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# the one rule for every integer field (bounds inside, so that the JSON Schema says minimum and maximum)
Shortlist = Annotated[Annotated[int, Field(ge=1, le=1000)], BeforeValidator(_whole)]
TopK = Annotated[Annotated[int, Field(ge=0, le=1000)], BeforeValidator(_whole)]
Count = Annotated[Annotated[int, Field(ge=0, le=1_000_000)], BeforeValidator(_whole)]
BatchSize = Annotated[Annotated[int, Field(ge=1, le=4096)], BeforeValidator(_whole)]


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


class DecodingSettings(BaseModel):
    """Every decoding setting of ``corrector/config.py`` a request may change; absent = the server's.

    Types are strict (``"0.5"`` is not a number, ``"no"`` is not a boolean); ranges are checked here, and
    whatever depends on the model (e.g. a confusion pair) by the corrector, as a 422 too."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    threshold: Unit | None = Field(default=None,
                                   description="apply an edit when its probability is above this (default: the model's)")
    use_lm: bool | None = Field(default=None, description="score candidates with the bundle's character LM")
    shortlist: Shortlist | None = Field(
        default=None, description="candidates per character fully scored (the server may set a lower maximum)")
    top_k: TopK | None = Field(
        default=None, description="the generator's best characters as candidates (the server may set a lower maximum)")
    max_edits: Count | None = Field(default=None, description="most edits per sentence; 0 = no limit")
    protect_dictionary_words: bool | None = Field(default=None,
                                                  description="never edit inside a multi-character jieba word")
    protect_kept_words: Count | None = Field(default=None,
                                             description="never edit inside a word the real training pairs kept as "
                                                         "written at least this many times and never corrected; 0 = off")
    protect_foreign_names: Unit | None = Field(
        default=None, description="never edit inside a run of 3+ characters written inside dot-joined foreign names at "
        "least this share of the time in the corpus (柯林顿, 哈玛斯); 0 = off")
    protect_regional_forms: bool | None = Field(
        default=None, description="never make an edit that only writes a word another region's way (计画/计划, "
        "爱滋/艾滋: the same text in OpenCC's Taiwan conversion)")
    veto_unreliable_pairs: bool | None = Field(
        default=None, description="never make an edit a → b that the model's ranker got wrong most of the time on the "
        "real training pairs (甚→什, 他→她)")
    protect: list[Word] | None = Field(default=None, max_length=1000, description="words never edited inside")
    confusions: list[Pair] | None = Field(default=None, max_length=1000,
                                          description='[A, B] pairs: B is always a candidate for A, e.g. [["己", "已"]]')

    def settings(self) -> dict[str, Any]:
        """The settings given (CorrectorConfig names), as plain values."""
        return {name: getattr(self, name) for name in type(self).model_fields
                if name in DECODING_NAMES and getattr(self, name) is not None}


class ServerDecodingSettings(DecodingSettings):
    """``--corrector-settings``: the per-request settings plus the resource one a client may not choose."""

    batch_size: BatchSize | None = Field(default=None, description="chunks per ONNX call")

    def settings(self) -> dict[str, Any]:
        out = super().settings()
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        return out


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
    texts: list[str] | None = Field(default=None, description="several texts, corrected together")

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
        if "protect" in settings:  # order and repeats do not matter
            settings["protect"] = sorted(set(settings["protect"]))
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
