"""Fresh test traces for TwinCheck's certificates, each shaped like a pattern seen in real
runs (BFCL multi-turn: vehicle, messaging, file system; τ-bench retail/airline), written by
hand so that no test depends on the real data."""

from __future__ import annotations

from typing import Any

from tests.builders.events import Events

S = {"type": "string"}
N = {"type": "number"}
B = {"type": "boolean"}
DOORS = {"type": "array", "items": S, "description": '[Enum]: ["driver", "passenger"]'}


def _tool(name: str, cls: str, props: dict[str, Any] | None = None, desc: str = "") -> dict:
    props = props or {}
    return {
        "name": name,
        "description": f"This tool belongs to {cls}. Tool description: {desc}",
        "parameters": {"type": "object", "properties": props, "required": list(props)},
        "meta": {"class": cls},
    }


VEHICLE = [
    _tool("pressBrakePedal", "VehicleControlAPI", {"pedalPosition": N}, "Presses the brake."),
    _tool("releaseBrakePedal", "VehicleControlAPI", desc="Releases the brake pedal."),
    _tool(
        "startEngine",
        "VehicleControlAPI",
        {"ignitionMode": {"type": "string", "description": '[Enum]: ["START", "STOP"]'}},
        "Starts the engine.",
    ),
    _tool("lockDoors", "VehicleControlAPI", {"unlock": B, "door": DOORS}, "Locks the doors."),
    _tool(
        "displayCarStatus",
        "VehicleControlAPI",
        {
            "option": {
                "type": "string",
                "description": '[Enum]: ["fuel", "doors", "brakePedal", "engine"]',
            }
        },
        "Displays the status of the vehicle.",
    ),
    _tool("check_tire_pressure", "VehicleControlAPI", desc="Checks the tire pressure."),
    _tool("fillFuelTank", "VehicleControlAPI", {"fuelAmount": N}, "Fills the fuel tank."),
]
MESSAGES = [
    _tool("message_login", "MessageAPI", {"user_id": S}, "Log in a user."),
    _tool("get_user_id", "MessageAPI", {"user": S}, "Get the user id of a user."),
    _tool("add_contact", "MessageAPI", {"user_name": S}, "Add a contact."),
    _tool("send_message", "MessageAPI", {"receiver_id": S, "message": S}, "Send a message."),
    _tool("view_messages_sent", "MessageAPI", desc="View sent messages."),
]
FILES = [
    _tool("ls", "GorillaFileSystem", desc="List the contents of the current directory."),
    _tool("cd", "GorillaFileSystem", {"folder": S}, "Change directory."),
    _tool("touch", "GorillaFileSystem", {"file_name": S}, "Create a file."),
    _tool("cp", "GorillaFileSystem", {"source": S, "destination": S}, "Copy a file."),
    _tool("rm", "GorillaFileSystem", {"file_name": S}, "Remove a file or directory."),
    _tool("cat", "GorillaFileSystem", {"file_name": S}, "Display the contents of a file."),
]
SOCIAL = [
    _tool("follow_user", "TwitterAPI", {"username_to_follow": S}, "Follow a user."),
    _tool("unfollow_user", "TwitterAPI", {"username_to_unfollow": S}, "Unfollow a user."),
    _tool("list_all_following", "TwitterAPI", desc="List all following."),
]
TRADING = [
    _tool("place_order", "TradingBot", {"symbol": S, "amount": N}, "Place an order."),
    _tool("cancel_order", "TradingBot", {"order_id": {"type": "integer"}}, "Cancel an order."),
    _tool("get_order_details", "TradingBot", {"order_id": {"type": "integer"}}, "Order details."),
]


def bfcl(trace_id: str, tools: list[dict], **config: Any) -> Events:
    """A BFCL-shaped trace: env ``bfcl`` (so the BFCL inverse table and read-only list apply)."""
    return Events(trace_id, tools=tools, env={"name": "bfcl", "config": config})


def brake_release(
    request: str = "Please start the engine; make sure the doors are locked.",
) -> Events:
    """Real BFCL pattern (base_56): press the brake because starting failed, start, then
    release the brake nobody asked to release."""
    b = bfcl("brake", VEHICLE)
    b.user(request)
    b.call("c1", "startEngine", ignitionMode="START")
    b.result(
        "c1",
        content='{"error": "Brake pedal needs to be pressed when starting the engine."}',
        status="error",
    )
    b.call("c2", "pressBrakePedal", pedalPosition=1.0)
    b.result("c2", content='{"brakePedalStatus": "pressed", "brakePedalForce": 1000.0}')
    b.call("c3", "startEngine", ignitionMode="START")
    b.result("c3", content='{"engineState": "running"}')
    b.call("c4", "releaseBrakePedal")
    return b


def stale_card(request: str = "Use the card ending in 8107 for that order, please.") -> Events:
    """TwinCheck App. Fig. 6 (retail): an earlier lookup supplies card_4332; the latest user
    message asks for the card ending in 8107; the actor carries the stale card forward."""
    schema = {
        "type": "object",
        "properties": {"order_id": S, "payment_method_id": S},
        "required": ["order_id", "payment_method_id"],
    }
    b = Events(
        "stale",
        tools=[
            {
                "name": "get_user_details",
                "parameters": {"type": "object", "properties": {"user_id": S}},
                "read_only": True,
            },
            {"name": "modify_pending_order_payment", "parameters": schema},
        ],
    )
    b.user("I want to change the payment of order #W123. My user id is mia_1.", turn=0)
    b.call("c1", "get_user_details", user_id="mia_1")
    b.result(
        "c1",
        content={
            "user_id": "mia_1",
            "payment_methods": {
                "card_4332": {"last_four": "4332"},
                "card_8107": {"last_four": "8107"},
            },
            "default_payment": "card_4332",
        },
    )
    b.assistant("Which card would you like to use? You have cards ending in 4332 and 8107.", turn=0)
    b.user(request, turn=1)
    b.call(
        "c2",
        "modify_pending_order_payment",
        turn=1,
        order_id="#W123",
        payment_method_id="card_4332",
    )
    return b
