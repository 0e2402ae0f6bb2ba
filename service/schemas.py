"""Request and response bodies of the HTTP API (separate models: what comes in is not what goes out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from corrector import Correction

Word = Annotated[str, StringConstraints(min_length=1, max_length=100)]


@dataclass(frozen=True)
class CorrectOptions:
    """Per-request decoding options. Requests are batched together only when these are equal."""

    threshold: float | None = None
    max_edits: int | None = None
    protect: tuple[str, ...] = ()


def _request_schema(schema: dict[str, Any]) -> None:
    """Document the contract: ``text`` is a string, ``texts`` a list, and exactly one of them is given."""
    props = schema["properties"]
    for name in ("text", "texts"):
        prop = props[name]
        [not_null] = [s for s in prop.pop("anyOf") if s.get("type") != "null"]
        prop.pop("default", None)
        prop.update(not_null)
    schema["oneOf"] = [{"required": ["text"]}, {"required": ["texts"]}]


class CorrectRequest(BaseModel):
    """Exactly one of ``text`` or ``texts``; the options apply to every text of the request."""

    model_config = ConfigDict(
        extra="forbid", strict=True, allow_inf_nan=False,
        json_schema_extra=_request_schema,
    )

    text: str | None = Field(default=None, description="one text to correct", examples=["今天天汽很好"])
    texts: list[str] | None = Field(default=None, description="several texts, corrected together")
    threshold: float | None = Field(default=None, ge=0.0, le=1.0, description="detection threshold (default: the model's)")
    max_edits: int | None = Field(default=None, ge=0, le=1_000_000, strict=False,  # 3.0 is a JSON Schema integer
                                  description="most edits per sentence; 0 = no limit")
    protect: list[Word] | None = Field(default=None, max_length=1000, description="words never edited inside")

    @field_validator("max_edits", mode="before")
    @classmethod
    def _a_number_not_text(cls, v: Any) -> Any:
        if isinstance(v, (bool, str)):
            raise ValueError("max_edits must be a whole number")
        return v

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
        protect = tuple(sorted(set(self.protect))) if self.protect else ()  # order and repeats do not matter
        return CorrectOptions(self.threshold, self.max_edits, protect)


class EditOut(BaseModel):
    position: int = Field(description="index of the character in the input text (Unicode code points)")
    source: str = Field(description="the character found there")
    target: str = Field(description="the character it becomes")
    confidence: float = Field(ge=0.0, le=1.0)
    reason: Literal["pinyin", "shape", "other"] = Field(description="similar sound, similar shape, or neither")


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
