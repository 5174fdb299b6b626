"""The one Definitions, resources binding, sensors, schedules, domain configs and the CLI."""
