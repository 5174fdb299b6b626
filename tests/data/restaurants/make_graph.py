"""Writes ``graph.cypher``: a small restaurant-guide graph (308 nodes) as one Neo4j-style
``CREATE`` script — the external-style certification test set's graph (see ``questions.yaml``).

Deterministic (``random.Random(7)``); run ``python tests/data/restaurants/make_graph.py`` to
rewrite the script. It holds what real graphs hold and our generators do not: text with commas,
semicolons, quotes, newlines and non-ASCII letters, a name that reads as a number, an empty
string, ties in numeric properties, nodes without some properties.
"""

from __future__ import annotations

import random
from pathlib import Path

CITIES = [
    ("Lyon", "France", 516092),
    ("Paris", "France", 2102650),
    ("Bologna", "Italy", 390625),
    ("Naples", "Italy", 913462),
    ("Osaka", "Japan", 2752412),
    ("Kyoto", "Japan", 1464890),
    ("Oaxaca", "Mexico", 270955),
    ("Porto", "Portugal", 231800),
]
CUISINES = [
    "French",
    "Italian",
    "Japanese",
    "Mexican",
    "Portuguese",
    "Vegan",
    "Seafood",
    "Bakery",
    "Fusion",
    "Street Food",
]
LOCAL = {"France": "French", "Italy": "Italian", "Japan": "Japanese", "Mexico": "Mexican", "Portugal": "Portuguese"}
FIRST = [
    "Amélie",
    "Bruno",
    "Chiara",
    "Diego",
    "Emi",
    "Fabien",
    "Giulia",
    "Hiro",
    "Inês",
    "João",
    "Kenji",
    "Lucía",
    "Marco",
    "Noémie",
    "Óscar",
    "Paola",
    "Quentin",
    "Rosa",
    "Sora",
    "Tomás",
]
LAST = ["Arnaud", "Bianchi", "Castro", "Dubois", "Esposito", "Fujita", "García", "Hayashi", "Iglesias", "Jourdain"]
NATION = {
    "Amélie": "France",
    "Bruno": "Italy",
    "Chiara": "Italy",
    "Diego": "Mexico",
    "Emi": "Japan",
    "Fabien": "France",
    "Giulia": "Italy",
    "Hiro": "Japan",
    "Inês": "Portugal",
    "João": "Portugal",
    "Kenji": "Japan",
    "Lucía": "Mexico",
    "Marco": "Italy",
    "Noémie": "France",
    "Óscar": "Mexico",
    "Paola": "Italy",
    "Quentin": "France",
    "Rosa": "Mexico",
    "Sora": "Japan",
    "Tomás": "Portugal",
}
PREFIX = ["Le", "La", "Il", "Casa", "Taberna", "Maison", "Osteria", "Bistro", "Café", "Trattoria"]
NOUN = [
    "Petit Zinc",
    "Luna",
    "Sakura",
    "Jardin",
    "Fuego",
    "Marée",
    "Forno",
    "Cantina",
    "Azul",
    "Verde",
    "Nord",
    "Sol",
    "Umami",
    "Olivo",
    "Maïs",
]
SPECIAL = ["1984", "Chez Nous, Encore", 'The "Quiet" Room', "Ramen 🍜 Bar"]
SUMMARIES = [
    "Fun, but a little far fetched",
    "Loud, crowded, worth it",
    "Quiet; excellent service",
    'A "hidden" gem',
    "Pricey, yet memorable",
    "Crème brûlée, perfection",
    "Slow service, great view",
    "Would not return",
    "Best tasting menu in town",
    "Cosy.\nCash only",
    "Honest food, fair prices",
    "Overrated",
    "Small plates; big flavours",
    "Worth the queue, just",
    "",
]
OUTLETS = ["Le Guide Vert", "Gambero Rosso", "Tabelog", "The Fork", "Eater", "Time Out", ""]


def lit(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
    return f"'{text}'"


def props(d: dict) -> str:
    return "{" + ", ".join(f"{k}: {lit(v)}" for k, v in d.items() if v is not None) + "}"


def build() -> str:
    rng = random.Random(7)
    parts: list[str] = []
    city_vars = {}
    for i, (name, country, pop) in enumerate(CITIES, 1):
        city_vars[name] = v = f"city{i}"
        parts.append(
            f"({v}:City {props({'id': f'city-{i:02d}', 'name': name, 'country': country, 'population': pop})})"
        )
    cuisine_vars = {}
    for i, name in enumerate(CUISINES, 1):
        cuisine_vars[name] = v = f"cuisine{i}"
        parts.append(f"({v}:Cuisine {props({'id': f'cuisine-{i:02d}', 'name': name})})")
    names = [f"{p} {n}" for p in PREFIX for n in NOUN]
    rng.shuffle(names)
    restaurants = []
    for i in range(1, 81):
        name = SPECIAL[i - 1] if i <= len(SPECIAL) else names[i]
        city = CITIES[(i - 1) % len(CITIES)] if i <= 16 else rng.choice(CITIES)
        r = {
            "id": f"rest-{i:02d}",
            "name": name,
            "opened": rng.randint(1985, 2023),
            "price": rng.randint(1, 4),
            "seats": rng.choice(range(20, 151, 10)),
            "vegan_friendly": rng.random() < 0.3,
            "rating": None if i % 17 == 0 else round(rng.uniform(2.5, 4.9), 1),
        }
        restaurants.append((f"rest{i}", r, city[0], city[1]))
        parts.append(f"(rest{i}:Restaurant {props(r)})")
    chefs = []
    for i in range(1, 41):
        first, last = FIRST[(i - 1) % len(FIRST)], LAST[(i * 7 + i // 21) % len(LAST)]
        c = {
            "id": f"chef-{i:02d}",
            "name": f"{first} {last}",
            "born": rng.randint(1950, 1996),
            "nationality": NATION[first],
        }
        chefs.append((f"chef{i}", c))
        parts.append(f"(chef{i}:Chef {props(c)})")
    critics = []
    for i in range(1, 21):
        c = {
            "id": f"critic-{i:02d}",
            "name": f"{FIRST[(i * 3) % 20]} {LAST[(i + 4) % 10]} ({i})",
            "outlet": OUTLETS[i % len(OUTLETS)],
        }
        critics.append((f"critic{i}", c))
        parts.append(f"(critic{i}:Critic {props(c)})")
    reviews = []
    for i in range(1, 151):
        rv = {
            "id": f"review-{i:03d}",
            "summary": rng.choice(SUMMARIES),
            "stars": rng.randint(1, 5),
            "year": rng.randint(2015, 2024),
        }
        reviews.append((f"review{i}", rv))
        parts.append(f"(review{i}:Review {props(rv)})")
    rels: list[str] = []
    for v, _, city, country in restaurants:
        rels.append(f"({v})-[:LOCATED_IN]->({city_vars[city]})")
        served = [LOCAL[country]] if rng.random() < 0.7 else []
        if not served or rng.random() < 0.4:
            served.append(rng.choice([c for c in CUISINES if c not in served]))
        for c in served:
            rels.append(f"({v})-[:SERVES]->({cuisine_vars[c]})")
    for i, (v, chef) in enumerate(chefs):
        places = rng.sample(restaurants, 2 if i % 5 == 0 else 1)
        for rv, *_ in places:
            rels.append(f"({v})-[:WORKS_AT {props({'since': rng.randint(2000, 2024)})}]->({rv})")
    by_age = sorted(chefs, key=lambda c: c[1]["born"])
    for v, chef in by_age[10:35]:
        mentor = rng.choice([m for m in by_age[:10] if m[1]["born"] < chef["born"]] or by_age[:1])
        rels.append(f"({v})-[:TRAINED_UNDER]->({mentor[0]})")
    for v, _ in critics:
        rels.append(f"({v})-[:BASED_IN]->({city_vars[rng.choice(CITIES)[0]]})")
    for i, (v, _) in enumerate(reviews):
        rels.append(f"({critics[i % len(critics)][0]})-[:WROTE]->({v})")
        rels.append(f"({v})-[:ABOUT]->({restaurants[(i * 13) % 60][0]})")
    body = ",\n".join(parts + rels)
    head = "// A restaurant guide: cities, cuisines, restaurants, chefs, critics and reviews.\n"
    return f"{head}CREATE\n{body};\n"


if __name__ == "__main__":
    out = Path(__file__).with_name("graph.cypher")
    out.write_text(build(), encoding="utf-8")
    print(f"wrote {out}")
