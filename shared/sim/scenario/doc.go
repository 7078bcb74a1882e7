// Package scenario is the simulator's scenario format (docs/scenarios.md; the field names are the
// contract in SCENARIOS.md): the JSON a scenario file holds, decoded strictly (an unknown field is
// an error naming its path), and validated whole before a run starts, so a run never meets a
// scenario it cannot play. Load profiles are functions of scenario time (LoadProfile.At).
package scenario
