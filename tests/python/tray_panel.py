#!/usr/bin/python3
"""A stand-in desktop panel for the tray end-to-end test (tests/tests/tray_panel.rs).

It is what a panel with StatusNotifier support is to an app, over the session bus it is started
on: the org.kde.StatusNotifierWatcher (items register with it; it says a host is present) and a
host that reads each registered item as a panel draws it: the org.kde.StatusNotifierItem
properties (Status, Title, the icon as IconPixmap or IconName + IconThemePath, decoded to RGBA, hex)
and its com.canonical.dbusmenu menu (GetLayout). It follows the item's change signals (NewIcon,
NewTitle, NewStatus, NewToolTip, LayoutUpdated, ItemsPropertiesUpdated) and re-reads the item
after each.

With --notifications it is also the desktop's notification server
(org.freedesktop.Notifications), recording each Notify call; with --no-watcher it is only that,
a desktop with notifications and no tray host; with --watcher-without-host the watcher is there
but says no host is registered (IsStatusNotifierHostRegistered false) and nothing reads the item.

Protocol: one JSON object per line on stdout ("ready", "registered", "signal", "snapshot",
"notify", "clicked", "error"); commands as JSON lines on stdin:
  {"cmd": "snapshot"}                 read the item again and print a snapshot
  {"cmd": "click", "id": 7}           what a panel does when the user picks menu item 7:
                                      AboutToShow on the root, then Event(7, "clicked")
Needs Debian's python3-dbus and python3-gi (run with /usr/bin/python3).
"""

import argparse
import json
import os
import struct
import sys
import time
import zlib

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

WATCHER_NAME = "org.kde.StatusNotifierWatcher"
WATCHER_PATH = "/StatusNotifierWatcher"
WATCHER_IFACE = "org.kde.StatusNotifierWatcher"
ITEM_IFACE = "org.kde.StatusNotifierItem"
MENU_IFACE = "com.canonical.dbusmenu"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
NOTIFY_NAME = "org.freedesktop.Notifications"
NOTIFY_PATH = "/org/freedesktop/Notifications"
# Every D-Bus call the panel makes is bounded.
CALL_TIMEOUT = 5.0

ITEM_SIGNALS = ["NewIcon", "NewTitle", "NewStatus", "NewToolTip", "NewAttentionIcon", "NewOverlayIcon"]
MENU_SIGNALS = ["LayoutUpdated", "ItemsPropertiesUpdated", "ItemActivationRequested"]


def emit(obj):
    obj.setdefault("t", time.monotonic())
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def plain(value):
    """D-Bus values as JSON values."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.Byte, dbus.Int16, dbus.Int32, dbus.Int64, dbus.UInt16, dbus.UInt32, dbus.UInt64)):
        return int(value)
    if isinstance(value, dbus.Double):
        return float(value)
    if isinstance(value, (dbus.String, dbus.ObjectPath, dbus.Signature)):
        return str(value)
    if isinstance(value, dbus.Dictionary):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (dbus.Array, dbus.Struct, list, tuple)):
        return [plain(v) for v in value]
    return value


def decode_png(data):
    """A PNG file as (width, height, RGBA bytes): 8-bit RGBA or RGB, not interlaced (what
    libayatana-appindicator's callers write); anything else raises ValueError."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("no IHDR")
    width, height, depth, color, _, _, interlace = header
    channels = {6: 4, 2: 3}.get(color)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, color type {color}, interlace {interlace}")
    raw = zlib.decompress(idat)
    stride = width * channels
    out = bytearray()
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        prev = line
        if channels == 4:
            out += line
        else:
            for i in range(0, stride, 3):
                out += line[i:i + 3] + b"\xff"
    return width, height, bytes(out)


def pixmap_rgba(pixmaps):
    """The largest IconPixmap entry (ARGB32, network byte order) as (width, height, RGBA)."""
    width, height, argb = max(pixmaps, key=lambda p: int(p[0]) * int(p[1]))
    argb = bytes(bytearray(argb))
    out = bytearray()
    for i in range(0, len(argb), 4):
        a, r, g, b = argb[i:i + 4]
        out += bytes((r, g, b, a))
    return int(width), int(height), bytes(out)


def menu_node(node):
    ident, props, children = node
    props = plain(props)
    return {
        "id": int(ident),
        "type": props.get("type", "standard"),
        "label": props.get("label", ""),
        "enabled": props.get("enabled", True),
        "visible": props.get("visible", True),
        "children_display": props.get("children-display", ""),
        "props": {k: v for k, v in props.items() if k not in ("label", "type", "enabled", "visible")},
        "children": [menu_node(c) for c in children],
    }


class Host:
    """Reads the registered items, as a panel would, and follows their signals."""

    def __init__(self, bus):
        self.bus = bus
        self.item = None  # (bus name, object path)
        self.seq = 0
        self.pending = None

    def register(self, bus_name, path):
        first = self.item is None
        self.item = (bus_name, path)
        emit({"event": "registered", "bus": bus_name, "path": path})
        if first:
            for name in ITEM_SIGNALS:
                self.bus.add_signal_receiver(self.on_signal(name), signal_name=name,
                                             dbus_interface=ITEM_IFACE, bus_name=bus_name)
            for name in MENU_SIGNALS:
                self.bus.add_signal_receiver(self.on_signal(name), signal_name=name,
                                             dbus_interface=MENU_IFACE, bus_name=bus_name)
        self.snapshot("registered")

    def on_signal(self, name):
        def handler(*args):
            emit({"event": "signal", "name": name, "args": plain(list(args))})
            # Signals come in bursts (an icon, then a new menu); one re-read after the burst
            # settles, as panels do. The wait restarts with each signal.
            if self.pending is not None:
                GLib.source_remove(self.pending)
            self.pending = GLib.timeout_add(40, self.settled, name)
        return handler

    def settled(self, cause):
        self.pending = None
        self.snapshot(cause)
        return False

    def snapshot(self, cause):
        if self.item is None:
            emit({"event": "error", "message": "no item registered"})
            return
        self.seq += 1
        bus_name, path = self.item
        shot = {"event": "snapshot", "seq": self.seq, "cause": cause}
        try:
            obj = self.bus.get_object(bus_name, path, introspect=False)
            props = plain(obj.GetAll(ITEM_IFACE, dbus_interface=PROPS_IFACE, timeout=CALL_TIMEOUT))
            pixmaps = props.pop("IconPixmap", []) or []
            for key in ("AttentionIconPixmap", "OverlayIconPixmap"):
                props.pop(key, None)
            shot["properties"] = props
            shot["icon"] = self.icon(props, pixmaps)
            menu_path = props.get("Menu")
            if menu_path:
                menu = self.bus.get_object(bus_name, menu_path, introspect=False)
                revision, layout = menu.GetLayout(0, -1, dbus.Array([], signature="s"),
                                                  dbus_interface=MENU_IFACE, timeout=CALL_TIMEOUT)
                shot["menu"] = {"path": menu_path, "revision": int(revision), "layout": menu_node(layout)}
        except Exception as error:  # a panel shows what it could read; the test sees why not
            shot["error"] = f"{type(error).__name__}: {error}"
        emit(shot)

    def icon(self, props, pixmaps):
        if pixmaps:
            width, height, rgba = pixmap_rgba(pixmaps)
            source = "IconPixmap"
        else:
            name = props.get("IconName", "")
            theme = props.get("IconThemePath", "")
            if not name:
                return {"error": "neither IconPixmap nor IconName"}
            # libayatana-appindicator passes a file's full path as the name; a themed name is
            # looked up in IconThemePath.
            candidates = [name] if os.path.isabs(name) else [
                os.path.join(theme, name + ext) for ext in (".png", "")]
            file = next((c for c in candidates if os.path.isfile(c)), None)
            if file is None:
                return {"error": f"no file for IconName {name!r} in IconThemePath {theme!r}"}
            with open(file, "rb") as f:
                width, height, rgba = decode_png(f.read())
            source = "file:" + file
        return {"source": source, "width": width, "height": height, "rgba": rgba.hex()}

    def click(self, ident):
        bus_name, path = self.item
        obj = self.bus.get_object(bus_name, path, introspect=False)
        menu_path = obj.Get(ITEM_IFACE, "Menu", dbus_interface=PROPS_IFACE, timeout=CALL_TIMEOUT)
        menu = self.bus.get_object(bus_name, menu_path, introspect=False)
        # A panel opens the menu (AboutToShow on the root), sends the click, closes the menu.
        menu.AboutToShow(0, dbus_interface=MENU_IFACE, timeout=CALL_TIMEOUT)
        for target, kind in ((ident, "clicked"), (0, "closed")):
            try:
                menu.Event(dbus.Int32(target), kind, dbus.Int32(0, variant_level=1),
                           dbus.UInt32(int(time.time()) & 0xFFFFFFFF), dbus_interface=MENU_IFACE,
                           timeout=CALL_TIMEOUT)
            except dbus.exceptions.DBusException as error:
                # Quit: the app is gone before it answers.
                return f"{kind}: {error.get_dbus_name()}"
        return None


class Watcher(dbus.service.Object):
    """org.kde.StatusNotifierWatcher, with this process as its one host."""

    def __init__(self, bus, host):
        # None: a watcher with no host (a panel that registers items but shows none).
        self.host = host
        self.items = []
        super().__init__(bus, WATCHER_PATH)

    @dbus.service.method(WATCHER_IFACE, in_signature="s", out_signature="", sender_keyword="sender")
    def RegisterStatusNotifierItem(self, service, sender=None):
        # Either a bus name (the item at /StatusNotifierItem) or the item's object path on the
        # caller's connection (libayatana-appindicator sends its path).
        if service.startswith("/"):
            bus_name, path = sender, str(service)
        else:
            bus_name, path = str(service), "/StatusNotifierItem"
        key = bus_name + path
        if key not in self.items:
            self.items.append(key)
        self.StatusNotifierItemRegistered(key)
        if self.host is None:
            emit({"event": "registered", "bus": bus_name, "path": path, "shown": False})
        else:
            GLib.idle_add(lambda: self.host.register(bus_name, path) and False)

    @dbus.service.method(WATCHER_IFACE, in_signature="s", out_signature="")
    def RegisterStatusNotifierHost(self, service):
        self.StatusNotifierHostRegistered()

    @dbus.service.signal(WATCHER_IFACE, signature="s")
    def StatusNotifierItemRegistered(self, service):
        pass

    @dbus.service.signal(WATCHER_IFACE, signature="s")
    def StatusNotifierItemUnregistered(self, service):
        pass

    @dbus.service.signal(WATCHER_IFACE, signature="")
    def StatusNotifierHostRegistered(self):
        pass

    def properties(self):
        return {
            "RegisteredStatusNotifierItems": dbus.Array(self.items, signature="s"),
            "IsStatusNotifierHostRegistered": dbus.Boolean(self.host is not None),
            "ProtocolVersion": dbus.Int32(0),
        }

    @dbus.service.method(PROPS_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        props = self.properties()
        if interface != WATCHER_IFACE or name not in props:
            raise dbus.exceptions.DBusException(f"no property {interface}.{name}",
                                                name="org.freedesktop.DBus.Error.UnknownProperty")
        return props[name]

    @dbus.service.method(PROPS_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.properties() if interface == WATCHER_IFACE else {}


class Notifications(dbus.service.Object):
    """org.freedesktop.Notifications: records each notification."""

    def __init__(self, bus):
        self.next_id = 0
        super().__init__(bus, NOTIFY_PATH)

    @dbus.service.method(NOTIFY_NAME, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, icon, summary, body, actions, hints, timeout):
        self.next_id += 1
        emit({"event": "notify", "id": self.next_id, "app_name": str(app_name), "summary": str(summary),
              "body": str(body), "actions": plain(actions)})
        return dbus.UInt32(self.next_id)

    @dbus.service.method(NOTIFY_NAME, in_signature="", out_signature="as")
    def GetCapabilities(self):
        return dbus.Array(["body", "actions"], signature="s")

    @dbus.service.method(NOTIFY_NAME, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("patchbay-stand-in", "patchbay", "1", "1.2")

    @dbus.service.method(NOTIFY_NAME, in_signature="u", out_signature="")
    def CloseNotification(self, ident):
        self.NotificationClosed(ident, 3)

    @dbus.service.signal(NOTIFY_NAME, signature="uu")
    def NotificationClosed(self, ident, reason):
        pass

    @dbus.service.signal(NOTIFY_NAME, signature="us")
    def ActionInvoked(self, ident, action):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", action="store_true", help="also serve org.freedesktop.Notifications")
    parser.add_argument("--no-watcher", action="store_true", help="no StatusNotifierWatcher (no tray host)")
    parser.add_argument("--watcher-without-host", action="store_true",
                        help="a StatusNotifierWatcher that says no host is registered")
    args = parser.parse_args()

    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    host = Host(bus)
    keep = []
    if args.watcher_without_host:
        keep.append(Watcher(bus, None))
        keep.append(dbus.service.BusName(WATCHER_NAME, bus, do_not_queue=True))
    elif not args.no_watcher:
        # The host's own name first (the specification's org.kde.StatusNotifierHost-PID), then
        # the watcher's: an item that sees the watcher appear finds a host already there.
        keep.append(dbus.service.BusName(f"org.kde.StatusNotifierHost-{os.getpid()}", bus, do_not_queue=True))
        keep.append(Watcher(bus, host))
        keep.append(dbus.service.BusName(WATCHER_NAME, bus, do_not_queue=True))
    if args.notifications or args.no_watcher or args.watcher_without_host:
        keep.append(Notifications(bus))
        keep.append(dbus.service.BusName(NOTIFY_NAME, bus, do_not_queue=True))

    loop = GLib.MainLoop()

    def on_stdin(channel, condition):
        line = channel.readline()
        if not line:
            loop.quit()
            return False
        try:
            command = json.loads(line)
            if command.get("cmd") == "snapshot":
                host.snapshot("asked")
            elif command.get("cmd") == "click":
                unanswered = host.click(int(command["id"]))
                emit({"event": "clicked", "id": int(command["id"]), "unanswered": unanswered})
            else:
                emit({"event": "error", "message": f"unknown command {line.strip()!r}"})
        except Exception as error:
            emit({"event": "error", "message": f"{type(error).__name__}: {error}"})
        return True

    stdin = GLib.IOChannel.unix_new(sys.stdin.fileno())
    GLib.io_add_watch(stdin, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, on_stdin)
    emit({"event": "ready", "watcher": not args.no_watcher, "bus": bus.get_unique_name()})
    loop.run()


if __name__ == "__main__":
    main()
