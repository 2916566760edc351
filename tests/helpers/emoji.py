"""Emoji codepoints: what a system without an emoji font draws as an empty box."""

from __future__ import annotations

# Unicode's emoji (emoji-data.txt, Extended_Pictographic and Emoji_Presentation) outside the symbols
# every text font has: the pictograph planes, the miscellaneous symbols and the dingbats that are
# emoji, arrows and shapes with an emoji form, and the emoji presentation selector.
RANGES = (
    (0x1F000, 0x1FAFF),
    (0x2600, 0x26FF),
    (0x2194, 0x2199),
    (0x21A9, 0x21AA),
    (0x231A, 0x231B),
    (0x2328, 0x2328),
    (0x23CF, 0x23CF),
    (0x23E9, 0x23F3),
    (0x23F8, 0x23FA),
    (0x25AA, 0x25AB),
    (0x25B6, 0x25B6),
    (0x25C0, 0x25C0),
    (0x25FB, 0x25FE),
    (0x2934, 0x2935),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0xFE0F, 0xFE0F),
)
DINGBATS = frozenset(
    {
        *(0x2702, 0x2705, *range(0x2708, 0x270E), 0x270F, 0x2712, 0x2714, 0x2716, 0x271D, 0x2721, 0x2728),
        *(0x2733, 0x2734, 0x2744, 0x2747, 0x274C, 0x274E, 0x2753, 0x2754, 0x2755, 0x2757, *range(0x2763, 0x2768)),
        *(0x2795, 0x2796, 0x2797, 0x27A1, 0x27B0, 0x27BF),
    }
)


def is_emoji(char: str) -> bool:
    code = ord(char)
    return code in DINGBATS or any(low <= code <= high for low, high in RANGES)


def emoji_in(text: str) -> list[str]:
    """The emoji in `text`, each once, in the order they first appear."""
    return list(dict.fromkeys(c for c in text if is_emoji(c)))
