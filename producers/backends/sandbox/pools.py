"""Entity pools for seeded data, partitioned by split so dev/test worlds share no people or places with train."""

from __future__ import annotations

from dataclasses import dataclass
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
