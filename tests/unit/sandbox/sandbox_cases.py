"""Data for the per-tool tests: preconditions for happy paths and the documented errors not derived generically.

Generic derivations (see test_tools.py): invalid_argument (an unknown argument), not_found (an unknown
id), conflict (the example twice), permission_denied (permissions revoked), needs_confirmation
(confirm=false). Everything else a tool documents is listed here.
"""

from __future__ import annotations

from typing import Any

Call = tuple[str, dict[str, Any]]

# Calls that put the seed-0 train world in a state where the tool's documented example succeeds
# (a setup call may itself fail harmlessly when the state already holds, e.g. "mark unread" on an unread one).
SETUP: dict[str, list[Call]] = {
    "contacts.favorite": [("contacts.unfavorite", {"id": "c_2"})],
    "contacts.unfavorite": [("contacts.favorite", {"id": "c_2"})],
    "contacts.unblock": [("contacts.block", {"id": "c_1"})],
    "contacts.find_by_phone": [("contacts.create_contact", {"name": "Sam Doe", "phone": "+1-555-0000"})],
    "messages.mark_read": [("messages.mark_unread", {"id": "msg_2"})],
    "messages.mark_unread": [("messages.mark_read", {"id": "msg_2"})],
    "messages.unpin": [("messages.pin", {"id": "msg_1"})],
    "email.mark_read": [("email.mark_unread", {"id": "em_1"})],
    "email.mark_unread": [("email.mark_read", {"id": "em_1"})],
    "email.unstar": [("email.star", {"id": "em_1"})],
    "email.send_draft": [("email.update_draft", {"draft_id": "dr_1", "to": ["a@mail.test"]})],
    "calendar.add_attendee": [("calendar.remove_attendee", {"event_id": "evt_1", "contact_id": "c_20"})],
    "calendar.remove_attendee": [("calendar.add_attendee", {"event_id": "evt_1", "contact_id": "c_20"})],
    "notes.unpin": [("notes.pin", {"id": "note_1"})],
    "notes.remove_tag": [("notes.add_tag", {"note_id": "note_1", "tag": "later"})],
    "rides.confirm_pickup": [("rides.request_ride", {"pickup_id": "pl_1", "dropoff_id": "pl_3"})],
    "rides.cancel_ride": [("rides.request_ride", {"pickup_id": "pl_1", "dropoff_id": "pl_3"})],
    "rides.active_ride": [("rides.request_ride", {"pickup_id": "pl_1", "dropoff_id": "pl_3"})],
    "food.remove_from_cart": [("food.add_to_cart", {"item_id": "dish_1_1"})],
    "food.checkout": [("food.add_to_cart", {"item_id": "dish_1_1"})],
    "food.cancel_order": [("food.add_to_cart", {"item_id": "dish_1_1"}), ("food.checkout", {"confirm": True})],
    "shopping.remove_from_cart": [("shopping.add_to_cart", {"item_id": "prod_2"})],
    "shopping.checkout": [("shopping.add_to_cart", {"item_id": "prod_2"})],
    "shopping.cancel_order": [
        ("shopping.add_to_cart", {"item_id": "prod_2"}),
        ("shopping.checkout", {"confirm": True}),
    ],
    "shopping.remove_from_wishlist": [("shopping.add_to_wishlist", {"id": "prod_1"})],
    "wallet.unfreeze_card": [("wallet.freeze_card", {"id": "card_2"})],
    "clock.disable_alarm": [("clock.enable_alarm", {"id": "al_2"})],
    "reminders.reopen": [("reminders.complete", {"id": "rem_1"})],
    "maps.unsave_place": [("maps.save_place", {"id": "pl_3"})],
    "music.add_to_playlist": [("music.remove_from_playlist", {"playlist_id": "pls_1", "track_id": "trk_30"})],
    "music.like": [("music.unlike", {"id": "trk_2"})],
    "music.remove_from_playlist": [("music.add_to_playlist", {"playlist_id": "pls_1", "track_id": "trk_30"})],
    "music.pause": [("music.play_track", {"id": "trk_1"})],
    "music.resume": [("music.play_track", {"id": "trk_1"}), ("music.pause", {})],
    "music.unlike": [("music.like", {"id": "trk_2"})],
    "photos.remove_from_album": [("photos.add_to_album", {"album_id": "alb_1", "photo_id": "ph_1"})],
    "photos.unfavorite": [("photos.favorite", {"id": "ph_1"})],
    "photos.move_file": [("photos.move_file", {"file_id": "file_1", "folder": "documents"})],
    "settings.unpair_device": [("settings.pair_device", {"id": "bt_1"})],
    "settings.grant_permission": [("settings.revoke_permission", {"permission": "maps.location"})],
    "weather.save_city": [("weather.unsave_city", {"city": "Lisbon"})],
    "travel.check_in": [("travel.book_flight", {"flight_id": "fl_2", "confirm": True})],
}

# (tool, code) -> (setup calls, args) for documented errors the generic derivations do not produce.
BLOCK_C1: list[Call] = [("contacts.block", {"id": "c_1"})]
RIDE: list[Call] = [("rides.request_ride", {"pickup_id": "pl_1", "dropoff_id": "pl_3"})]
ATLANTIS = {"city": "Atlantis"}
ERRORS: dict[tuple[str, str], tuple[list[Call], dict[str, Any]]] = {
    ("contacts.find_by_phone", "not_found"): ([], {"phone": "+1-000-0000"}),
    ("phone.call", "conflict"): (BLOCK_C1, {"contact_id": "c_1"}),
    ("phone.last_call", "not_found"): ([("phone.delete_call", {"id": f"call_{i}"}) for i in range(1, 16)], {}),
    ("messages.send", "conflict"): (BLOCK_C1, {"contact_id": "c_1", "text": "hi"}),
    ("messages.reply", "conflict"): (
        [("messages.send", {"contact_id": "c_1", "text": "hi"}), *BLOCK_C1],
        {"message_id": "msg_25", "text": "ok"},
    ),
    ("messages.forward", "conflict"): (BLOCK_C1, {"message_id": "msg_2", "contact_id": "c_1"}),
    ("messages.share_location", "conflict"): (BLOCK_C1, {"contact_id": "c_1"}),
    ("calendar.create_event", "not_found"): (
        [],
        {"title": "x", "start": "2026-03-20T07:00", "end": "2026-03-20T08:00", "attendees": ["c_404"]},
    ),
    ("calendar.reschedule", "conflict"): (
        [("calendar.create_event", {"title": "x", "start": "2026-03-21T07:00", "end": "2026-03-21T08:00"})],
        {"event_id": "evt_1", "start": "2026-03-21T07:30", "end": "2026-03-21T08:30"},
    ),
    ("clock.change_alarm_time", "conflict"): (
        [("clock.set_alarm", {"time": "04:20"})],
        {"alarm_id": "al_1", "time": "04:20"},
    ),
    ("reminders.create_reminder", "not_found"): ([], {"title": "x", "list": "nope"}),
    ("maps.geocode", "not_found"): ([], {"address": "999 Nowhere Rd"}),
    ("maps.share_eta", "conflict"): (BLOCK_C1, {"contact_id": "c_1", "destination_id": "pl_2"}),
    ("rides.active_ride", "not_found"): ([], {}),
    ("rides.tip_driver", "conflict"): (RIDE, {"ride_id": "ride_6", "amount": 2.0}),
    ("rides.rate_ride", "conflict"): (RIDE, {"ride_id": "ride_6", "stars": 4}),
    ("rides.request_ride", "conflict"): (RIDE, {"pickup_id": "pl_1", "dropoff_id": "pl_4"}),
    ("food.add_to_cart", "unavailable"): ([], {"item_id": "dish_3_4"}),
    ("food.add_to_cart", "conflict"): ([], {"item_id": "dish_7_1"}),
    ("shopping.cheapest", "not_found"): ([], {"query": "zzz"}),
    ("shopping.add_to_cart", "unavailable"): ([], {"item_id": "prod_9"}),
    ("wallet.set_default_card", "conflict"): ([("wallet.freeze_card", {"id": "card_2"})], {"id": "card_2"}),
    ("music.play_playlist", "conflict"): ([("music.create_playlist", {"name": "Empty"})], {"id": "pls_2"}),
    ("photos.share_photo", "conflict"): (BLOCK_C1, {"photo_id": "ph_1", "contact_id": "c_1"}),
    ("settings.join_network", "conflict"): ([("settings.set_wifi", {"on": False})], {"network_id": "net_3"}),
    ("settings.join_network", "permission_denied"): ([], {"network_id": "net_1", "password": "wrong"}),
    ("weather.today", "not_found"): ([], ATLANTIS),
    ("weather.forecast", "not_found"): ([], ATLANTIS),
    ("weather.on_day", "not_found"): ([], {**ATLANTIS, "day": "2026-03-03"}),
    ("weather.will_it_rain", "not_found"): ([], {"city": "Lisbon", "day": "2026-04-30"}),
    ("weather.alerts", "not_found"): ([], ATLANTIS),
    ("weather.save_city", "not_found"): ([], ATLANTIS),
    ("weather.unsave_city", "not_found"): ([], ATLANTIS),
}
