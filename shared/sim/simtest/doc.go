// Package simtest holds the helpers the simulator's packages share in their tests: building a
// simulation from scenario JSON, calling its REST API, loading the project's scenarios and
// writing reroute commands.
package simtest
