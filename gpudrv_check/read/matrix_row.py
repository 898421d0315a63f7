"""A row of the support matrix: one precompiled driver image that exists."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class MatrixRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    driver_branch: str
    kernel: str
    os_tag: str
    line: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver_branch, self.kernel, self.os_tag)
