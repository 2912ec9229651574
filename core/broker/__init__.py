"""The message broker: store, membership, delivery into panes, inbox views."""
