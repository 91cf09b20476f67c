"""The wire format, as the pipeline's modules name it: it lives in :mod:`grader.wire` (the exercise
side's :mod:`grader.problem` and :mod:`grader.seeding` read stored and hidden cases with it, and
must not import the grading pipeline)."""

from ..wire import (  # noqa: F401
    ML_DTYPES,
    Unsupported,
    decode,
    decode_cases,
    encode,
    encode_cases,
    has_course_object,
    has_unsupported,
)
