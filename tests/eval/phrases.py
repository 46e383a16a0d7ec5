"""The phrase book of the conversational benchmark: what people say, and what they later ask.

Templates, not sentences: the generator (`conversations.py`) fills the slots and picks variants
with its seeded generator. The vocabulary is varied on purpose (a question rarely repeats its
evidence's words) and the turns are short, as chat turns are. `CONCEPTS` links each paraphrase
question's words to its evidence's, for the stand-in model only: lexical ranking never sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMES = [
    "Caroline", "Melanie", "Jonas", "Priya", "Tomasz", "Aisha", "Diego", "Hannah", "Kwame",
    "Ingrid", "Mateo", "Yuki", "Fatima", "Oliver", "Chloe", "Rafael", "Nadia", "Ewan", "Leila",
    "Sven", "Grace", "Omar", "Beatriz", "Felix", "Zoe", "Arjun", "Maeve", "Luca", "Sofia", "Ben",
]  # fmt: skip


@dataclass(frozen=True)
class Fact:
    """Something about a speaker: said outright, or in answer to another speaker's prompt."""

    values: tuple[str, ...]
    statements: tuple[str, ...]
    answers: tuple[tuple[str, str], ...]
    questions: tuple[str, ...]


@dataclass(frozen=True)
class Arc:
    """A plan in one session and how it went in a later one: the question needs both."""

    slots: dict[str, tuple[str, ...]]
    plans: tuple[str, ...]
    outcomes: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Event:
    """Something reported as it happened: its session's date answers "when"."""

    reports: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Recurring:
    """A topic a speaker comes back to in several months; the question names one month."""

    lines: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Change:
    """A fact said, then changed later: only the later value answers "now"."""

    values: tuple[str, ...]
    before: tuple[str, ...]
    after: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Paraphrase:
    """A turn and a question about it that share no content word, only concepts."""

    says: str
    question: str


FACTS = [
    Fact(
        ("beagle called Biscuit", "tabby cat called Miso", "parrot named Kiwi",
         "rescue greyhound called Pepper", "corgi named Waffles", "hamster called Nugget"),
        ("we got a {value} last week!", "our new pet is a {value}, so cute"),
        (("did you end up getting a pet?", "yep! a {value}"),
         ("how's the new family member?", "the {value}? chewing everything in sight")),
        ("What pet does {name} have?", "Which animal did {name} bring home?"),
    ),
    Fact(
        ("Leeds", "Porto", "Cork", "Gdansk", "Halifax", "Adelaide", "Tucson", "Bergen"),
        ("I'm from {value} originally, it rained constantly",
         "miss {value} sometimes, the sea mostly"),
        (("where are you from originally?", "{value}! tiny place though"),
         ("where did you grow up?", "{value}, right by the harbour")),
        ("Where is {name} from originally?", "Which town did {name} grow up in?"),
    ),
    Fact(
        ("nurse", "data analyst", "primary school teacher", "sous chef", "bike mechanic",
         "paralegal", "vet nurse", "bus driver"),
        ("I'm a {value}, the hours are brutal", "my job as a {value} is not glamorous trust me"),
        (("what do you do for work?", "{value}, about five years now"),
         ("so what's the day job?", "{value}. it pays the bills")),
        ("What does {name} do for a living?", "What is {name}'s job?"),
    ),
    Fact(
        ("The Overstory", "Piranesi", "Dune", "Circe", "Educated", "The Road", "Middlemarch"),
        ("reading {value} right now, can't put it down", "just finished {value}, wow"),
        (("read anything good lately?", "{value}, it's wild"),
         ("what's on your nightstand?", "{value}, halfway through")),
        ("What book is {name} reading?", "Which novel did {name} get through recently?"),
    ),
    Fact(
        ("ukulele", "drums", "bass guitar", "piano", "violin", "saxophone"),
        ("taking {value} lessons on tuesdays", "learning to play the {value}, fingers hurt"),
        (("you still doing the music thing?", "yeah, {value}, slowly getting better"),
         ("what are you learning these days?", "the {value}! don't laugh")),
        ("Which instrument does {name} play?", "What is {name} learning to play?"),
    ),
    Fact(
        ("ramen", "pad thai", "lasagne", "pierogi", "tacos al pastor", "shakshuka"),
        ("I could eat {value} every single day", "{value} is my favourite food, made it again"),
        (("what's your comfort food?", "{value}, no contest"),
         ("if you had one last meal?", "{value} obviously")),
        ("What is {name}'s favourite food?", "What dish does {name} love most?"),
    ),
    Fact(
        ("an older brother, Tom", "a twin sister, Ana", "a little brother, Leo",
         "two older sisters", "a stepbrother, Kai"),
        ("I have {value}, we bicker constantly lol",
         "visiting my siblings, I have {value} you know"),
        (("got any siblings?", "{value}"), ("is it just you growing up?", "nope, {value}")),
        ("What siblings does {name} have?", "Does {name} have a brother or sister?"),
    ),
    Fact(
        ("Arsenal", "the Celtics", "Boca Juniors", "the Yankees", "Leinster", "the Packers"),
        ("my team {value} lost again, I'm done", "{value} won!!! best night"),
        (("who do you support?", "{value}, since forever"),
         ("you into sports at all?", "only {value} really")),
        ("Which team does {name} support?", "What sports team is {name} a fan of?"),
    ),
    Fact(
        ("a red Vespa", "an old Volvo estate", "a green Mini", "a cargo bike", "a Tesla"),
        ("I get everywhere on {value}", "{value} got a parking ticket again ugh"),
        (("how do you get around?", "{value} mostly"),
         ("do you drive?", "kind of, I've got {value}")),
        ("How does {name} get around town?", "What does {name} drive?"),
    ),
    Fact(
        ("shellfish", "pollen", "penicillin", "dust", "sesame", "latex"),
        ("I'm allergic to {value}, so annoying", "{value} set off my allergy again"),
        (("anything you can't have?", "{value}, I swell up"),
         ("any allergies I should know about?", "{value}, sadly")),
        ("What is {name} allergic to?", "What allergy does {name} have?"),
    ),
    Fact(
        ("bouldering", "pottery", "birdwatching", "salsa dancing", "chess", "woodworking"),
        ("spent all saturday doing {value}", "my favourite hobby is {value}, it's my zen"),
        (("what do you do on weekends?", "{value} mostly"),
         ("got any hobbies?", "{value}, bit obsessed")),
        ("What is {name}'s hobby?", "How does {name} spend free time?"),
    ),
    Fact(
        ("Severance", "The Bear", "Bluey", "Succession", "Bake Off", "Shogun"),
        ("binged {value} all weekend", "watching {value}, no spoilers please"),
        (("watching anything good?", "{value}, obsessed"),
         ("what should I watch next?", "{value}, trust me")),
        ("What show is {name} watching?", "Which series is {name} hooked on?"),
    ),
]  # fmt: skip

ARCS = [
    Arc(
        {"place": ("Lisbon", "Kyoto", "Reykjavik", "Marrakech", "Oaxaca", "Tallinn"),
         "best": ("the food market", "the hot springs", "the street art", "the old castle")},
        ("booked flights to {place}!! leaving in a few weeks", "planning a trip to {place}, tips?"),
        ("back home. {best} was the best part", "{best} made the whole thing honestly"),
        "Where did {name} travel and what was the highlight?",
    ),
    Arc(
        {"race": ("half marathon", "10k", "triathlon", "charity swim"),
         "result": ("came in at 1:52", "got a personal best", "had to walk the last bit")},
        ("signed up for a {race}, what have I done", "{race} training starts monday"),
        ("did it! {result}", "survived the {race}, {result}"),
        "What event did {name} enter, and how did it go?",
    ),
    Arc(
        {"subject": ("Spanish", "first aid", "coding", "photography", "sign language"),
         "result": ("passed with a distinction", "failed the final, retaking it",
                    "scraped a pass")},
        ("started an evening {subject} course", "enrolled in {subject} classes, eek"),
        ("results are in: {result}", "got my {subject} grade back, {result}"),
        "Which course did {name} take and what was the result?",
    ),
    Arc(
        {"room": ("bathroom", "kitchen", "spare room", "hallway"),
         "finish": ("green tiles", "oak floors", "a yellow wall", "open shelves")},
        ("we're redoing the {room}, total chaos", "the {room} is gutted, send help"),
        ("it's finished! went with {finish}, love it", "{finish} are in and it looks amazing"),
        "What did {name} renovate and what did it end up looking like?",
    ),
    Arc(
        {"company": ("Spotify", "a startup in Leeds", "the council", "a vet clinic", "Lego"),
         "result": ("they offered me the job", "didn't get it, oh well", "second round next week")},
        ("interview at {company} tomorrow, nervous", "got an interview with {company}!"),
        ("heard back: {result}", "so about that interview... {result}"),
        "Where did {name} interview and what came of it?",
    ),
    Arc(
        {"plant": ("chillies", "strawberries", "pumpkins", "sunflowers"),
         "result": ("slugs ate everything", "a massive harvest", "only three survived")},
        ("planted {plant} seeds on the windowsill", "trying {plant} on the balcony this year"),
        ("update on the {plant}: {result}", "garden report: {result}"),
        "What did {name} grow and how did it turn out?",
    ),
    Arc(
        {"band": ("Radiohead", "a jazz trio", "Arctic Monkeys", "the symphony"),
         "detail": ("we were in the front row", "it poured the whole time", "lost my voice")},
        ("got tickets for {band}!", "{band} tickets secured, finally"),
        ("last night was unreal, {detail}", "still buzzing, {detail}"),
        "Which concert did {name} go to and how was it?",
    ),
]  # fmt: skip

EVENTS = [
    Event(("passed my driving test this morning!!", "I PASSED. driving test done"),
          "When did {name} pass the driving test?"),
    Event(("officially moved into the new flat today", "keys handed over, we live here now"),
          "When did {name} move house?"),
    Event(("my niece was born last night, 3.2 kilos", "I'm an auntie! baby girl, born at 2am"),
          "When was {name}'s niece born?"),
    Event(("first day at the new job done, brain full", "started the new job today"),
          "When did {name} start the new job?"),
    Event(("broke my toe on the stairs today, idiot", "toe is definitely broken lol"),
          "When did {name} break a toe?"),
    Event(("we got engaged last night!!", "he proposed!!! at the lake"),
          "When did {name} get engaged?"),
    Event(("handed in my thesis today, free at last", "thesis submitted. sleeping for a week"),
          "When did {name} submit the thesis?"),
    Event(("had my wisdom teeth out today, hamster face", "wisdom teeth gone, soup diet"),
          "When did {name} have wisdom teeth removed?"),
    Event(("ran my first 5k this morning", "5k done, didn't stop once"),
          "When did {name} run a first 5k?"),
    Event(("my car got stolen from outside the house", "someone nicked the car overnight"),
          "When was {name}'s car stolen?"),
    Event(("got my first tattoo today, a little swallow",
           "tattoo done! it hurt less than I thought"),
          "When did {name} get a tattoo?"),
    Event(("we closed on the house today", "mortgage signed, we own a house now"),
          "When did {name} buy a house?"),
]  # fmt: skip

RECURRING = [
    Recurring(
        ("wedding planning is eating my life, the venue wants a deposit",
         "we picked the caterer for the wedding finally",
         "wedding invites went out, 120 people eek",
         "the wedding dress fitting went ok I think"),
        "What did {name} say about the wedding in {month}?",
    ),
    Recurring(
        ("training update: did 20k on sunday", "training is rough, my knee hurts",
         "skipped training all week, oops", "new training plan from the coach, intervals ugh"),
        "What did {name} say about training in {month}?",
    ),
    Recurring(
        ("the landlord still hasn't fixed the boiler", "landlord raised the rent again",
         "landlord finally sent a plumber", "landlord wants to sell the place, great"),
        "What did {name} mention about the landlord in {month}?",
    ),
    Recurring(
        ("job hunting update: two rejections this week", "job hunt going better, got a callback",
         "applied to eight jobs today, soul destroying", "job hunt on pause, need a break"),
        "What did {name} say about the job hunt in {month}?",
    ),
    Recurring(
        ("gran is back in hospital", "gran is home, doing better",
         "visited gran, she beat me at cards", "gran turned 90, we had cake"),
        "What news did {name} share about gran in {month}?",
    ),
    Recurring(
        ("choir rehearsal ran late again", "our choir is singing in the cathedral",
         "choir director quit!", "got a solo in choir, terrified"),
        "What did {name} say about choir in {month}?",
    ),
]  # fmt: skip

CHANGES = [
    Change(
        ("Leeds", "Bristol", "Glasgow", "Dublin", "Cardiff", "York"),
        ("living in {value} is great, so much going on", "rent in {value} is insane"),
        ("we moved from {old} to {new} last month", "settled in {new} now, don't miss {old}"),
        "Where does {name} live now?",
    ),
    Change(
        ("the bakery", "the library", "a call centre", "the hospital", "a bookshop"),
        ("work at {value} is so busy", "another double shift at {value}"),
        ("left {old}, started at {new} this week", "I work at {new} now, {old} was too much"),
        "Where does {name} work now?",
    ),
    Change(
        ("flat white", "oat latte", "black americano", "cortado", "chai"),
        ("my usual is a {value}, don't judge", "third {value} today oops"),
        ("switched from {old} to {new}, new me", "I'm a {new} person now, {old} is dead to me"),
        "What is {name}'s usual coffee order these days?",
    ),
    Change(
        ("the gym on Queen St", "yoga", "spin class", "swimming"),
        ("I do {value} before work most days", "{value} this morning, ouch"),
        ("dropped {old}, doing {new} now", "quit {old} and picked up {new}"),
        "What exercise does {name} do these days?",
    ),
    Change(
        ("a Fiat", "a Volvo", "an e-bike", "a Mini", "a Vespa"),
        ("{value} broke down again", "washed {value} for once"),
        ("sold {old}, got {new}", "said goodbye to {old}, hello {new}"),
        "What does {name} get around in now?",
    ),
    Change(
        ("law", "chemistry", "nursing", "history", "economics"),
        ("studying {value} is so much reading", "{value} exam on friday, pray for me"),
        ("switched from {old} to {new}, best decision", "I dropped {old}, doing {new} now"),
        "What is {name} studying now?",
    ),
]  # fmt: skip

PARAPHRASES = [
    Paraphrase("my grandma taught me to knit when I was little",
               "Who learned a yarn craft from an elderly relative as a youngster?"),
    Paraphrase("finally got my license, no more bus rides for me",
               "Which person passed the driving exam?"),
    Paraphrase("we're expecting a baby in the spring!!", "Who has a child on the way?"),
    Paraphrase("I've been vegetarian since january, not missing burgers at all",
               "Who stopped eating meat at the start of the year?"),
    Paraphrase("my flat flooded last night, the kitchen is ruined",
               "Whose apartment had water damage?"),
    Paraphrase("I broke my wrist skateboarding, cast for six weeks", "Who fractured an arm?"),
    Paraphrase("got promoted to team lead at work today",
               "Who moved up into management at the office?"),
    Paraphrase("the doctor says I'm allergic to peanuts", "Who cannot eat certain nuts safely?"),
    Paraphrase("I'm learning the cello, my neighbours hate me haha",
               "Who is taking up a string instrument?"),
    Paraphrase("we adopted two kittens from the shelter", "Who brought home a pair of young cats?"),
    Paraphrase("I ran my first marathon on sunday, legs are dead",
               "Who completed a 42 kilometre race at the weekend?"),
    Paraphrase("quit smoking three months ago, still craving", "Who gave up cigarettes?"),
    Paraphrase("my sister is getting married in Lisbon",
               "Whose sibling has a wedding in Portugal?"),
    Paraphrase("I'm moving to Berlin for the new job", "Who is relocating to Germany for work?"),
    Paraphrase("our roof leaks every time it rains", "Whose house lets water in during storms?"),
    Paraphrase("I can't sleep lately, up at 3am every night", "Who is suffering from insomnia?"),
    Paraphrase("bought a used Honda, the old Fiat finally died",
               "Who purchased a second-hand car?"),
    Paraphrase("I'm volunteering at the food bank on saturdays",
               "Who helps out at a charity each weekend?"),
    Paraphrase("my dad's surgery went fine, he's home now", "Whose father had an operation?"),
    Paraphrase("got my citizenship papers today", "Who became a naturalised national?"),
    Paraphrase("we're doing a juice cleanse, day two and I'm starving",
               "Who is on a detox diet?"),
    Paraphrase("lost my phone on the train, again", "Who misplaced a mobile during the commute?"),
    Paraphrase("started therapy, it's helping a lot", "Who began seeing a counsellor?"),
    Paraphrase("my band plays at the Rusty Anchor on friday", "Who has a gig with their group?"),
    Paraphrase("I'm training my puppy to stop biting",
               "Who is teaching a young dog some manners?"),
    Paraphrase("we planted tomatoes and basil on the balcony",
               "Who grows vegetables and herbs outside?"),
    Paraphrase("my laptop died right before the deadline",
               "Whose computer broke at the worst moment?"),
    Paraphrase("I'm saving up for a trip to Japan next year",
               "Who is putting money aside to visit Tokyo?"),
    Paraphrase("got my braces off finally, teeth feel weird",
               "Whose orthodontic wires were taken out?"),
    Paraphrase("my boss yelled at me in front of everyone",
               "Who was shouted at by a manager publicly?"),
]  # fmt: skip

_CONCEPT_GROUPS = {
    "knit": ("knit", "yarn"), "grandma": ("grandma", "relative", "elderly"),
    "license": ("license", "driving"), "baby": ("baby", "child"),
    "vegetarian": ("vegetarian", "meat"), "january": ("january", "year"),
    "flat": ("flat", "apartment"), "flood": ("flooded", "water", "leaks"),
    "broke": ("broke", "fractured"), "wrist": ("wrist", "arm"),
    "promoted": ("promoted", "management"), "work": ("work", "office", "job"),
    "peanut": ("peanuts", "nuts"), "cello": ("cello", "instrument", "string"),
    "kitten": ("kittens", "cats"), "two": ("two", "pair"),
    "marathon": ("marathon", "race"), "weekend": ("sunday", "saturdays", "weekend"),
    "smoking": ("smoking", "cigarettes"), "quit": ("quit", "gave"),
    "sister": ("sister", "sibling"), "married": ("married", "wedding"),
    "lisbon": ("lisbon", "portugal"), "moving": ("moving", "relocating"),
    "berlin": ("berlin", "germany"), "roof": ("roof", "house"), "rain": ("rains", "storms"),
    "sleep": ("sleep", "insomnia"), "bought": ("bought", "purchased"),
    "used": ("used", "second"), "car": ("honda", "fiat", "car"),
    "volunteer": ("volunteering", "helps", "charity"), "dad": ("dad", "father"),
    "surgery": ("surgery", "operation"), "citizen": ("citizenship", "naturalised", "national"),
    "cleanse": ("cleanse", "detox", "diet"), "phone": ("phone", "mobile"),
    "lost": ("lost", "misplaced"), "train": ("train", "commute"),
    "therapy": ("therapy", "counsellor"), "started": ("started", "began"),
    "band": ("band", "group", "gig"), "puppy": ("puppy", "dog"),
    "training": ("training", "teaching"), "tomato": ("tomatoes", "vegetables"),
    "basil": ("basil", "herbs"), "planted": ("planted", "grows"),
    "laptop": ("laptop", "computer"), "saving": ("saving", "money"),
    "japan": ("japan", "tokyo"), "trip": ("trip", "visit"),
    "braces": ("braces", "orthodontic"), "boss": ("boss", "manager"),
    "yelled": ("yelled", "shouted"),
}  # fmt: skip
CONCEPTS = {word: concept for concept, words in _CONCEPT_GROUPS.items() for word in words}
"""Word -> concept for the stand-in model: each paraphrase's question and evidence meet here."""

REACTIONS = [
    "oh nice!", "no way", "haha love that", "omg", "wait really?", "ugh, sorry", "that's huge",
    "congrats!!", "lol classic", "oh no", "amazing", "ha, of course", "good for you", "yikes",
    "hmm ok", "proud of you", "wow", "same honestly", "noooo", "love it",
]  # fmt: skip

FILLERS = [
    "haha ok", "yes, the blue one", "lol", "right??", "wait what", "same tbh", "fair enough",
    "brb", "ok back", "true", "hmm maybe", "the other one", "that one!", "exactly", "yep", "nah",
    "sure, thursday works", "can't, working late", "sorry, phone died", "hahaha", "k",
    "send me the link?", "done", "👍", "on my way", "5 mins", "that's what I said", "fine by me",
    "which one?", "the big one", "no, the second", "yes please", "good point", "wait, same one?",
]  # fmt: skip

SMALL_TALK = [
    ("how was your weekend?", "quiet, just errands and a nap"),
    ("did you see the game last night?", "only the second half, what a mess"),
    ("are we still on for friday?", "yes! 7 at the usual place"),
    ("how's the weather there?", "grey. always grey"),
    ("what are you up to tonight?", "nothing, sofa and pizza"),
    ("did you get my message?", "yes sorry, been slammed"),
    ("how's work been?", "busy, the usual"),
    ("seen the new cafe on the corner?", "tried it, the cake is good"),
    ("you free for a call later?", "after 8 works"),
    ("how are you feeling?", "better, thanks for asking"),
    ("what time is it there?", "almost midnight lol"),
    ("want to split a taxi?", "sure, meet outside"),
    ("any plans for the holidays?", "staying put this year"),
    ("did you finish it?", "not yet, nearly"),
    ("is it raining where you are?", "pouring"),
    ("what did you have for lunch?", "leftovers again"),
]  # fmt: skip

GREETINGS = ["hey!", "hi all", "morning", "heyyy", "hello hello", "hi!", "evening folks", "yo"]
FAREWELLS = [
    "ok gotta go, talk soon", "night!", "bye x", "speak tomorrow", "ttyl", "later!", "gn",
    "right, dinner time, bye",
]  # fmt: skip
