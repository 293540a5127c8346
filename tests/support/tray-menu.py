#!/usr/bin/env python3
"""Draw the tray menu as a panel renders it, from what the stand-in panel read over D-Bus.

Input: the directory tests/tests/tray_panel.rs writes with PATCHBAY_TRAY_MENU_OUT=DIR: menu.json
(the com.canonical.dbusmenu layout and the item's properties) and icon.rgba (the item's icon,
decoded). Output: a PNG of a panel strip with the icon and the open menu below it, drawn with
ImageMagick's convert: every label, separator and disabled line comes from the layout.

Usage: tests/support/tray-menu.py DIR OUT.png   (tests/support/tray-menu-screenshot.sh runs it)
"""

import json
import os
import subprocess
import sys

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
WIDTH = 360
PANEL_H = 30
ROW_H = 30
SEP_H = 11
PAD = 8
TEXT = "#1d1d1f"
DISABLED = "#8a8a8e"


def quoted(text):
    """A string for convert's -draw "text x,y '...'"."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def main():
    src, out = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "menu.json"), encoding="utf-8") as f:
        menu = json.load(f)
    rows = [c for c in menu["layout"]["children"] if c.get("visible", True)]
    menu_h = PAD * 2 + sum(SEP_H if r["type"] == "separator" else ROW_H for r in rows)
    height = PANEL_H + 6 + menu_h + 16
    icon = menu["icon"]
    icon_png = os.path.join(src, "icon.png")
    subprocess.run(
        ["convert", "-size", f"{icon['width']}x{icon['height']}", "-depth", "8",
         "rgba:" + os.path.join(src, icon["file"]), "-resize", "24x24", icon_png],
        check=True)

    left = 12
    top = PANEL_H + 6
    draw = [
        # The panel strip, and the open menu under the icon.
        "-fill", "#2b2b2e", "-draw", f"rectangle 0,0 {WIDTH + 24},{PANEL_H - 1}",
        "-fill", "#3d3d42", "-draw", f"rectangle {WIDTH - 22},2 {WIDTH + 8},{PANEL_H - 3}",
        "-fill", "#00000022", "-draw", f"roundrectangle {left + 2},{top + 3} {left + WIDTH - 36},{top + menu_h + 3} 6,6",
        "-fill", "#fbfbfb", "-stroke", "#c8c8cc",
        "-draw", f"roundrectangle {left},{top} {left + WIDTH - 38},{top + menu_h} 6,6",
        "-stroke", "none",
    ]
    y = top + PAD
    for row in rows:
        if row["type"] == "separator":
            mid = y + SEP_H // 2
            draw += ["-fill", "#d9d9dd", "-draw", f"rectangle {left + 1},{mid} {left + WIDTH - 39},{mid}"]
            y += SEP_H
            continue
        label = row["label"].replace("_", "")  # mnemonics are not shown
        color = TEXT if row.get("enabled", True) else DISABLED
        draw += ["-fill", color, "-draw", f"text {left + 16},{y + 20} {quoted(label)}"]
        y += ROW_H
    subprocess.run(
        ["convert", "-size", f"{WIDTH + 24}x{height}", "xc:#e9e9ec", "-font", FONT, "-pointsize", "13"]
        + draw
        + [icon_png, "-geometry", f"+{WIDTH - 19}+3", "-composite", out],
        check=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
