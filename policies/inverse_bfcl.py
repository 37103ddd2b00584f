"""BFCL multi-turn's inverse pairs (`policies.inverse_tables`), read off the bfcl-eval package's
classes (``bfcl_eval/eval_checker/multi_turn_eval/func_source_code``): each method that sets
state and the method or flag value that sets it back, with how the two name their target.

Not pairs, on purpose: ``create_ticket``/``close_ticket`` (closing is a ticket's next step, not
an undo), ``mv`` (moving back needs the other directory), MathAPI (stateless), ``add_contact``
and ``message_login`` (no inverse method).
"""

from __future__ import annotations

from .inverse_tables import Action, DeclaredTable, InversePair

_RELEASE = ("release", "releasing", "let go", "lift")
BFCL_TABLE = DeclaredTable(
    "bfcl",
    [
        # VehicleControlAPI
        InversePair(
            "brake pedal press/release",
            Action("pressBrakePedal", "pedalPosition", (0,), negate=True),
            Action("releaseBrakePedal"),
            undo_words=_RELEASE,
            do_words=("press", "pressed", "pressing", "depress"),
        ),
        InversePair(
            "brake pedal press/press to 0",
            Action("pressBrakePedal", "pedalPosition", (0,), negate=True),
            Action("pressBrakePedal", "pedalPosition", (0,)),
            undo_words=_RELEASE,
            do_words=("press", "pressed", "pressing", "depress"),
        ),
        InversePair(
            "doors lock/unlock",
            Action("lockDoors", "unlock", (False,)),
            Action("lockDoors", "unlock", (True,)),
            target=(("door", "door"),),
            undo_words=("unlock", "unlocked", "unlocking", "open"),
            do_words=("lock", "locked", "locking", "secure"),
        ),
        InversePair(
            "engine start/stop",
            Action("startEngine", "ignitionMode", ("START",)),
            Action("startEngine", "ignitionMode", ("STOP",)),
            undo_words=("stop", "shut", "turn off", "switch off", "off"),
            do_words=("start", "ignite", "ignition", "turn on"),
        ),
        InversePair(
            "parking brake engage/release",
            Action("activateParkingBrake", "mode", ("engage",)),
            Action("activateParkingBrake", "mode", ("release",)),
            undo_words=(*_RELEASE, "disengage"),
            do_words=("engage", "activate", "apply", "set"),
        ),
        InversePair(
            "headlights on/off",
            Action("setHeadlights", "mode", ("on",)),
            Action("setHeadlights", "mode", ("off",)),
            undo_words=("off", "switch off", "turn off"),
            do_words=("on", "switch on", "turn on"),
        ),
        InversePair(
            "cruise control on/off",
            Action("setCruiseControl", "activate", (True,)),
            Action("setCruiseControl", "activate", (False,)),
            undo_words=("deactivate", "disable", "off", "cancel", "disengage"),
            do_words=("activate", "enable", "engage", "set"),
        ),
        # TwitterAPI
        InversePair(
            "follow/unfollow",
            Action("follow_user"),
            Action("unfollow_user"),
            target=(("username_to_follow", "username_to_unfollow"),),
            undo_words=("unfollow",),
            do_words=("follow",),
        ),
        # TradingBot
        InversePair(
            "watchlist add/remove",
            Action("add_to_watchlist"),
            Action("remove_stock_from_watchlist"),
            target=(("stock", "symbol"),),
            undo_words=("remove", "delete", "drop"),
            do_words=("add", "watch", "include"),
        ),
        InversePair(
            "fund/withdraw",
            Action("fund_account"),
            Action("withdraw_funds"),
            target=(("amount", "amount"),),
            undo_words=("withdraw", "withdrawal", "take out"),
            do_words=("fund", "deposit", "add", "top up"),
        ),
        InversePair(
            "order place/cancel",
            Action("place_order"),
            Action("cancel_order"),
            from_result=(("order_id", "order_id"),),
            undo_words=("cancel", "revoke", "withdraw"),
            symmetric=False,
        ),
        InversePair(
            "trading login/logout",
            Action("trading_login"),
            Action("trading_logout"),
            undo_words=("logout", "log out", "sign out", "log off"),
            symmetric=False,
        ),
        # TravelAPI
        InversePair(
            "flight book/cancel",
            Action("book_flight"),
            Action("cancel_booking"),
            from_result=(("booking_id", "booking_id"),),
            undo_words=("cancel", "revoke", "annul"),
            symmetric=False,
        ),
        # TicketAPI
        InversePair(
            "ticket login/logout",
            Action("ticket_login"),
            Action("logout"),
            undo_words=("logout", "log out", "sign out", "log off"),
            symmetric=False,
        ),
        # MessageAPI
        InversePair(
            "message send/delete",
            Action("send_message"),
            Action("delete_message"),
            target=(("receiver_id", "receiver_id"),),
            undo_words=("delete", "remove", "unsend", "retract", "recall"),
            symmetric=False,
        ),
        # GorillaFileSystem (names are local to the working directory: same name, same turn)
        InversePair(
            "mkdir/rmdir",
            Action("mkdir"),
            Action("rmdir"),
            target=(("dir_name", "dir_name"),),
            undo_words=("remove", "delete", "rmdir", "erase"),
            symmetric=False,
            breakers=("cd",),
        ),
        InversePair(
            "mkdir/rm",
            Action("mkdir"),
            Action("rm"),
            target=(("dir_name", "file_name"),),
            undo_words=("remove", "delete", "rm", "erase"),
            symmetric=False,
            breakers=("cd",),
        ),
        InversePair(
            "touch/rm",
            Action("touch"),
            Action("rm"),
            target=(("file_name", "file_name"),),
            undo_words=("remove", "delete", "rm", "erase"),
            symmetric=False,
            breakers=("cd",),
        ),
        # MemoryAPI_kv
        InversePair(
            "core memory add/remove",
            Action("core_memory_add"),
            Action("core_memory_remove"),
            target=(("key", "key"),),
            undo_words=("remove", "delete", "forget", "erase"),
            symmetric=False,
        ),
        InversePair(
            "archival memory add/remove",
            Action("archival_memory_add"),
            Action("archival_memory_remove"),
            target=(("key", "key"),),
            undo_words=("remove", "delete", "forget", "erase"),
            symmetric=False,
        ),
    ],
)
