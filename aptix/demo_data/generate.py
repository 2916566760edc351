"""Regenerate the demo dataset's CSV files (customers, products, orders) in this directory.

The CSVs are committed; this script only documents how they were made and remakes the same bytes
(the random generator is seeded). Run it from anywhere: `python aptix/demo_data/generate.py`.

A small online shop in 2025: 60 customers, 20 products in four categories, about 2,000 orders with
a summer dip and a holiday peak, so "revenue by month" has a visible seasonal shape.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 2025
ORDERS_PER_MONTH = 165
# Relative order volume per month of 2025: slow summer, strong Black Friday and December.
SEASON = [0.80, 0.75, 0.90, 0.95, 1.00, 0.85, 0.70, 0.65, 1.00, 1.10, 1.45, 1.85]

PRODUCTS = [  # (name, category, price)
    ("Aurora Laptop 14", "Hardware", 1299.00),
    ("Aurora Laptop 16", "Hardware", 1649.00),
    ("Nimbus Monitor 27", "Hardware", 379.00),
    ("Nimbus Monitor 32", "Hardware", 549.00),
    ("Pico Mini PC", "Hardware", 499.00),
    ("Quill Keyboard", "Accessories", 89.00),
    ("Glide Mouse", "Accessories", 39.00),
    ("Dock Pro USB-C", "Accessories", 229.00),
    ("Halo Headset", "Accessories", 129.00),
    ("Tote Laptop Sleeve", "Accessories", 29.00),
    ("Ledger Cloud (1 year)", "Software", 240.00),
    ("Atlas Analytics (1 year)", "Software", 960.00),
    ("Vault Backup (1 year)", "Software", 120.00),
    ("Scribe Office Suite", "Software", 149.00),
    ("Sentinel Antivirus", "Software", 59.00),
    ("Setup & Migration", "Services", 350.00),
    ("Priority Support (1 year)", "Services", 600.00),
    ("On-site Training Day", "Services", 1200.00),
    ("Extended Warranty", "Services", 199.00),
    ("Data Recovery", "Services", 450.00),
]
COUNTRIES = [
    ("United States", 14),
    ("Germany", 9),
    ("United Kingdom", 8),
    ("France", 6),
    ("Netherlands", 4),
    ("Canada", 5),
    ("Japan", 4),
    ("Brazil", 3),
    ("Australia", 3),
    ("Spain", 4),
]
SEGMENTS = [("Consumer", 30), ("Small Business", 20), ("Enterprise", 10)]
SEGMENT_WEIGHT = {"Consumer": 1.0, "Small Business": 1.6, "Enterprise": 2.4}  # how often each orders
MAX_QUANTITY = {"Consumer": 2, "Small Business": 5, "Enterprise": 12}
ENTERPRISE_DISCOUNT = 0.10
FIRST_NAMES = [
    "Ada",
    "Ben",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hiro",
    "Ines",
    "Jonas",
    "Kara",
    "Luis",
    "Maya",
    "Noah",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
]
LAST_NAMES = [
    "Almeida",
    "Becker",
    "Chen",
    "Dubois",
    "Evans",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jansen",
    "Kowalski",
    "Laurent",
    "Moreau",
    "Nakamura",
    "Okafor",
]
COMPANY_WORDS = [
    "Northwind",
    "Bluepeak",
    "Ironbark",
    "Lumen",
    "Brightside",
    "Copperleaf",
    "Harbor",
    "Keystone",
    "Meridian",
    "Oakridge",
    "Pinecrest",
    "Redwood",
    "Silverline",
    "Tidewater",
    "Westgate",
]
COMPANY_SUFFIXES = ["Ltd", "GmbH", "Labs", "Group", "Partners", "Systems"]


def _spread(pairs: list[tuple[str, int]]) -> list[str]:
    return [value for value, count in pairs for _ in range(count)]


def _customers(rng: random.Random) -> list[dict]:
    countries, segments = _spread(COUNTRIES), _spread(SEGMENTS)
    rng.shuffle(countries)
    rng.shuffle(segments)
    first_day, days = dt.date(2024, 3, 1), (dt.date(2025, 10, 31) - dt.date(2024, 3, 1)).days
    created = sorted(first_day + dt.timedelta(days=rng.randrange(days)) for _ in segments)
    people = rng.sample([f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES], len(segments))
    companies = rng.sample([f"{w} {s}" for w in COMPANY_WORDS for s in COMPANY_SUFFIXES], len(segments))
    return [
        {
            "id": i,
            "name": person if segment == "Consumer" else company,
            "country": country,
            "segment": segment,
            "created_at": day.isoformat(),
        }
        for i, (person, company, country, segment, day) in enumerate(
            zip(people, companies, countries, segments, created, strict=True), start=1
        )
    ]


def _orders(rng: random.Random, customers: list[dict], products: list[dict]) -> list[dict]:
    product_weights = [1.0 / (p["price"] ** 0.5) for p in products]  # cheap items sell more often
    rows = []
    for month, factor in enumerate(SEASON, start=1):
        start = dt.date(2025, month, 1)
        length = ((start.replace(month=month + 1) if month < 12 else dt.date(2026, 1, 1)) - start).days
        for _ in range(round(ORDERS_PER_MONTH * factor)):
            day = start + dt.timedelta(days=rng.randrange(length))
            buyers = [c for c in customers if c["created_at"] <= day.isoformat()]
            customer = rng.choices(buyers, [SEGMENT_WEIGHT[c["segment"]] for c in buyers])[0]
            product = rng.choices(products, product_weights)[0]
            discount = ENTERPRISE_DISCOUNT if customer["segment"] == "Enterprise" else 0.0
            rows.append(
                {
                    "customer_id": customer["id"],
                    "product_id": product["id"],
                    "quantity": rng.randint(1, MAX_QUANTITY[customer["segment"]]),
                    "unit_price": round(product["price"] * (1 - discount), 2),
                    "ordered_at": day.isoformat(),
                }
            )
    rows.sort(key=lambda r: (r["ordered_at"], r["customer_id"], r["product_id"]))
    return [{"id": i, **row} for i, row in enumerate(rows, start=1)]


def _write(name: str, rows: list[dict]) -> None:
    with open(HERE / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: f"{v:.2f}" if isinstance(v, float) else v for k, v in row.items()} for row in rows)


def main() -> None:
    rng = random.Random(SEED)
    products = [{"id": i, "name": n, "category": c, "price": p} for i, (n, c, p) in enumerate(PRODUCTS, start=1)]
    customers = _customers(rng)
    _write("customers", customers)
    _write("products", products)
    _write("orders", _orders(rng, customers, products))


if __name__ == "__main__":
    main()
