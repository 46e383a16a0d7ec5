"""A small synthetic file in LongMemEval's official format, for the converter's tests.

The real files are large and licensed separately, so they are never bundled: the user supplies
one. This sample has the official fields (question_id, question_type, question, answer,
haystack_session_ids, haystack_sessions of {role, content} turns, answer_session_ids), an
abstention question and two identical sessions.
"""

from __future__ import annotations

from typing import Any


def longmemeval_sample() -> list[dict[str, Any]]:
    """Three questions in the official format: one plain, one abstention, one with a copy."""

    def turns(*texts: str) -> list[dict[str, str]]:
        return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]

    return [
        {
            "question_id": "q1",
            "question_type": "single-session-user",
            "question": "What breed is the dog I adopted?",
            "answer": "A beagle",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_dates": ["2023/05/20", "2023/05/21"],
            "haystack_session_ids": ["s1", "s2"],
            "haystack_sessions": [
                turns("I adopted a beagle last week.", "Congratulations!"),
                turns("Any tips for sourdough?", "Feed the starter daily."),
            ],
            "answer_session_ids": ["s1"],
        },
        {
            "question_id": "q2_abs",
            "question_type": "single-session-user",
            "question": "What is my cat called?",
            "answer": "You never mentioned a cat.",
            "haystack_session_ids": ["s3"],
            "haystack_sessions": [turns("Hello", "Hi")],
            "answer_session_ids": [],
        },
        {
            "question_id": "q3",
            "question_type": "multi-session",
            "question": "How many marathons did I run?",
            "answer": "2",
            "haystack_session_ids": ["s4", "s5", "s6"],
            "haystack_sessions": [
                turns("I ran the Berlin marathon."),
                turns("I ran the Berlin marathon."),
                turns("I ran Boston too."),
            ],
            "answer_session_ids": ["s5", "s6"],
        },
    ]
