"""Entity pools for seeded data, partitioned by split so dev/test worlds share no people or places with train.

Each split has a base share of people, places and venues, which every world of the built-in task suites uses
whole. Train also has **new entities** that no built-in world holds: worlds seeded from ``NEW_ENTITY_WORLDS`` on
(the task constructor's suites, ``producers.tasks.suite.FIRST_GENERATED_SUITE``) draw a world's worth from the base
share and the new entities together, so a task generated for a later round names people and places the cold start
never showed, and a success on it is evidence that the model copies what it reads.
Within a split no name is a substring of another ("Lara" would find "Clara" in a contacts search).

Tried 2026-12-05: every train world drawing from base and new entities alike (the cold start's demonstrations
included). Round 0 of the main job, seed 0: dev 0.131 -> 0.013, test 0.056 -> 0.044 (1,200 steps, final loss 0.083):
the model no longer memorised the frequent values and did not yet copy the new ones (``tu.set_alarm`` wrote a train
label and time, ``mem.wake_alarm`` lost its label to the copy bias). So the demonstrations keep the base share.
With new entities in generated worlds only (the main job, seed 0): rounds 0-1 unchanged (dev 0.131, 0.094), round 2
dev 0.100 instead of 0.094 (one sub_agent task, answered by a guess, which the verifier now refuses: the
``call_any`` look-ups of the answer templates and ``grounding.py``). None of round
2's 16 generated rollouts was solved (15 of 48 built-in ones were), so they reach the reweighter and RL as failures,
not SFT; with seed 1, one of 16 was (``sa.warmest_city``, by looking up only the one base-pool city of three).
Tried again 2026-12-05 under the verifier that refuses guesses, with the procedure prior (``learner.procedure_prior``),
every train world drawing from base and new entities: round-0 cold starts, seed 0 dev 0.050 -> 0.081 and test
0.025 -> 0.050, seed 1 dev 0.113 -> 0.100 and test 0.056 -> 0.031; the same templates solved (alarms, focus
sessions), and the model wrote other train names instead ("Anna Hughes" for "Nora Acheampong"). Not adopted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields, replace
from typing import Literal

Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test")

_FIRST = (
    "Ava Liam Maya Noah Zoe Ethan Lena Omar Iris Felix Nora Hugo Clara Ravi Elena Tariq Sofia Jonas "
    "Priya Mateo Hana Lucas Amara Diego Yuki Leo Freya Kai Anika Bruno Selma Idris Mira Theo Ines Pavel "
    "Dalia Arjun Nell Oscar Rosa Emil Leila Victor Astrid Kofi Greta Samir Lucia Anton Wren Malik Ada "
    "Tomas Esme Rafael Ingrid Dev Carmen"
).split()
_LAST = (
    "Ruiz Chen Okafor Novak Silva Patel Berg Haddad Kim Moreau Rossi Tanaka Schmidt Costa Walsh Ivanova "
    "Nguyen Larsen Mendes Kowalski Ali Fischer Sato Duarte Brennan Horvat Yilmaz Lund Acheampong Varga"
).split()
_STREETS = (
    "Oak Maple Cedar Pine Birch Elm Harbor River Lake Hill Garden Mill Bridge Park Church Station Market "
    "Castle Meadow Forest Willow Sunset Valley Spring Orchard Quarry Canal Chapel Beacon Summit"
).split()
_CITIES = ("Lisbon Porto Madrid Seville Paris Lyon Berlin Munich Vienna Prague Rome Milan Dublin Oslo Athens").split()
_VENUES = (
    "Saffron Basil Olive Copper Juniper Harbor Lantern Fig Ember Tamarind Clove Sage Pepper Walnut "
    "Indigo Marigold Cinder Thyme Ginger Hazel Laurel Mango Nutmeg Quince Rye Sumac Tulip Umber Vanilla Wasabi"
).split()
_CUISINES = "Italian Thai Mexican Indian Japanese Greek Lebanese Korean Vietnamese Spanish".split()
_ITEMS = (
    "headphones charger notebook backpack kettle umbrella lamp mug blender sneakers jacket scarf "
    "toaster speaker keyboard mouse monitor pillow blanket candle teapot bottle wallet watch sunglasses "
    "camera tripod novel puzzle plant"
).split()
_ARTISTS = (
    "Nova Echo, Blue Harbor, The Lanterns, Mira Vale, Static Bloom, Iron Tides, Velvet Road, Kite Season, "
    "Paper Moons, Golden Hour, North Wire, Quiet Giants, Amber Fields, Neon Garden, Silver Lake"
).split(", ")
_WORDS = (
    "river night light morning glass fire summer gold wild silent electric falling open broken "
    "endless paper distant ocean velvet northern"
).split()

_NEW_TRAIN_FIRST = (
    "Aaron Abel Adrian Agnes Aiden Alba Alice Alma Amir Anna Aria Arlo Asha Axel Beatrix Bianca Boris Caleb "
    "Celia Cyrus Dana Daniel Dario Delia Denis Edgar Edith Elias Elif Ella Enzo Erik Eva Ezra Farah "
    "Fatima Flora Gabriel Gemma Gideon Gloria Hector Henry Ilse Imani Isaac Jade Jamal Jasper Joel "
    "Julia June Karim Kira Laila Levi Lila Magnus Marco Marta Milo Nadia Nico Nina Olga Otto Paula "
    "Rhea Rita Ruben Ruth Sami Sara Simon Talia Tess Vera Viktor Wanda Yara Yusuf Zara Zane Mila"
).split()
_NEW_TRAIN_LAST = (
    "Adler Alvarez Andersen Baker Bauer Becker Blake Brandt Castro Cruz Dahl Diaz Ferreira Garcia "
    "Gomez Grant Hansen Hughes Jensen Keller Klein Kumar Lang Lopez Meyer Mori Nakamura Olsen Ortiz Park "
    "Petrov Reyes Romero Santos Shah Suzuki Torres Vogel Wagner Weber Young Zhang Lin Ward Fox Hale Reed Frost"
).split()
_NEW_TRAIN_STREETS = (
    "Ash Bay Brook Clover Cliff Cove Crown Dale Dock Fern Glen Grove Heath Ivy King Linden Poplar Queen "
    "Ridge Rose Shore Spruce Vine Wharf Yew Alder Hawthorn Rowan Sycamore Chestnut Holly Beech Larch"
).split()
_NEW_TRAIN_CITIES = (
    "Barcelona Valencia Bilbao Granada Marseille Nice Bordeaux Hamburg Cologne Dresden Zurich Geneva Brussels "
    "Antwerp Amsterdam Rotterdam Copenhagen Stockholm Helsinki Tallinn Riga Warsaw Krakow Budapest Zagreb "
    "Florence Naples Turin Bologna Edinburgh Glasgow Cork Galway Bergen Gothenburg Salzburg Ljubljana "
    "Bucharest Valletta"
).split()
_NEW_TRAIN_VENUES = (
    "Anise Cardamom Cobalt Coral Crimson Dill Fennel Garnet Jasmine Kale Lemon Lotus Mint Mustard Nectar Onyx "
    "Paprika Pistachio Plum Poppy Sorrel Tarragon Truffle Vermilion Zest Acorn Barley Cherry Chili Cocoa Cumin "
    "Lavender Lime Lychee Pecan Rosemary Tangerine Yuzu Wheat Cassia Borage Chervil Galangal"
).split()
_NEW_TRAIN_ITEMS = (
    "drone printer tablet scooter thermos stapler easel guitar ukulele helmet gloves raincoat slippers sandals "
    "earbuds router webcam microphone projector skillet whisk vase mirror rug hammock binoculars compass kayak "
    "skateboard frisbee telescope journal pencil"
).split()
_NEW_TRAIN_ARTISTS = (
    "Low Comets, Pale Atlas, Wild Orchard, Copper Sky, Lunar Drift, Scarlet Tide, Hollow Pines, Bright Static, "
    "Violet Hours, Distant Shores, Crystal Fox, Summer Ghosts, Red Kites, Winter Signal, Cloud Parade"
).split(", ")
_NEW_TRAIN_WORDS = (
    "quiet bright hollow crimson frozen gentle hidden lunar misty rising shadow silver starlit sunlit thunder "
    "twilight wandering winter autumn golden"
).split()
_NEW_TRAIN_CUISINES = "French Turkish Ethiopian Peruvian Moroccan Brazilian Chinese German Portuguese Persian".split()


def _third(items: list[str] | tuple[str, ...], i: int) -> tuple[str, ...]:
    return tuple(items[i::3])


@dataclass(frozen=True)
class Pool:
    """The names, streets, cities and venues a world of one split may use."""

    first: tuple[str, ...]
    last: tuple[str, ...]
    streets: tuple[str, ...]
    cities: tuple[str, ...]
    venues: tuple[str, ...]
    items: tuple[str, ...]
    artists: tuple[str, ...]
    words: tuple[str, ...]
    cuisines: tuple[str, ...]

    def draw(self, rng: random.Random, sizes: Pool) -> Pool:
        """At most as many of each as ``sizes`` has, in this pool's order (a field no longer than that is kept)."""
        drawn: dict[str, tuple[str, ...]] = {}
        for f in fields(self):
            items, size = getattr(self, f.name), len(getattr(sizes, f.name))
            if len(items) > size:
                drawn[f.name] = tuple(items[i] for i in sorted(rng.sample(range(len(items)), size)))
        return replace(self, **drawn)


POOLS: dict[Split, Pool] = {
    split: Pool(
        first=_third(_FIRST, i),
        last=_third(_LAST, i),
        streets=_third(_STREETS, i),
        cities=_third(_CITIES, i),
        venues=_third(_VENUES, i),
        items=_third(_ITEMS, i),
        artists=_third(_ARTISTS, i),
        words=_third(_WORDS, i),
        cuisines=_third(_CUISINES, i),
    )
    for i, split in enumerate(SPLITS)
}
"""Each split's base share: every world of a built-in suite uses all of it."""
NEW_ENTITIES: dict[Split, Pool] = {
    "train": Pool(
        first=tuple(_NEW_TRAIN_FIRST),
        last=tuple(_NEW_TRAIN_LAST),
        streets=tuple(_NEW_TRAIN_STREETS),
        cities=tuple(_NEW_TRAIN_CITIES),
        venues=tuple(_NEW_TRAIN_VENUES),
        items=tuple(_NEW_TRAIN_ITEMS),
        artists=tuple(_NEW_TRAIN_ARTISTS),
        words=tuple(_NEW_TRAIN_WORDS),
        cuisines=tuple(_NEW_TRAIN_CUISINES),
    )
}
"""Entities of a split that only generated worlds hold (none for dev and test)."""
NEW_ENTITY_WORLDS = 1_000_000
"""World seeds from here on draw from a split's base share and its new entities together."""


def split_pool(split: Split) -> Pool:
    """Everything a world of ``split`` may name: the base share, then the new entities."""
    base, new = POOLS[split], NEW_ENTITIES.get(split)
    if new is None:
        return base
    return Pool(**{f.name: getattr(base, f.name) + getattr(new, f.name) for f in fields(Pool)})


def world_pool(split: Split, seed: int) -> Pool:
    """The entities of the world ``seed`` of ``split``: the base share below ``NEW_ENTITY_WORLDS``; from there a
    seeded draw of as many of each from ``split_pool`` (kept in pool order)."""
    if seed < NEW_ENTITY_WORLDS:
        return POOLS[split]
    return split_pool(split).draw(random.Random(f"{split}:{seed}:pool"), POOLS[split])
