"""Chatter: drawers that say nothing of their own, which the hybrid ranking weighs down.

A conversation filed one turn a drawer is a third chatter: "wow", "yep", "right??", "that's
what I said", "haha ok". Such a turn shares a question's function words and its speaker's name
(`Diego: yep` for "Which animal did Diego bring home?"), and, being short, scores high on both
legs: on the conversational benchmark's turns they filled the first places of the questions
hybrid missed (docs/retrieval.md, "Chatter"). A drawer is chatter when every word of its own,
past a leading speaker label (`Diego: `), is an English function word or an interjection:
such a drawer holds no fact, whatever question it matches. Only a short text can be chatter
(`MAX_CHATTER_LENGTH`). The list is English, like the stemmer; a drawer in another language is
never chatter.
"""

from __future__ import annotations

import re

from palace.search.lexical import terms

# Function words (the common English stop lists, with "said", "say" and "one"); the
# interjections, backchannels and courtesies of chat; its greetings and farewells.
_FUNCTION_WORDS = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here
there when where why how all any both each few more most other some such no nor not only own
same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn
doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn said say one
"""
_INTERJECTIONS = """
ok okay k yes yeah yep yup nah nope wow omg lol haha hahaha hmm ugh oops yikes aww oh ah eh hey
hi hello bye night thanks thank sorry sure right true exactly fine cool nice great amazing
awesome congrats really wait done good maybe brb ttyl gn tbh lmao please fair enough
"""
_GREETINGS = """
hiya yo sup howdy morning afternoon evening later cya x xx
"""
CHATTER_TERMS = frozenset(
    term for word in (_FUNCTION_WORDS + _INTERJECTIONS + _GREETINGS).split() for term in terms(word)
)
# Chat stretches a word ("heyyy", "noooo", "yesss"): a letter three times or more counts once.
_STRETCHED = re.compile(r"(\w)\1{2,}")

# "Diego: ", "user: ", "Dr. Ng: ": the speaker of a turn filed as `Speaker: text`.
_SPEAKER = re.compile(r"^[^\s:][^:\n]{0,39}: ")


# Chatter is a line of chat: a longer text is not read (analysing 5,000 characters takes a
# third of a millisecond, a cost on every drawer indexed), and is never chatter.
MAX_CHATTER_LENGTH = 200


def is_chatter(content: str) -> bool:
    """Whether a drawer's text, past a speaker label, is at most `MAX_CHATTER_LENGTH`
    characters and holds no word but function words, interjections, greetings and farewells,
    stretched or not."""
    own = _SPEAKER.sub("", content, count=1)
    if len(own) > MAX_CHATTER_LENGTH:
        return False
    return all(term in CHATTER_TERMS for term in terms(_STRETCHED.sub(r"\1", own)))
