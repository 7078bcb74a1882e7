// Command costtable prints the cost table of docs/deploy.md: it runs the cost scenario through the
// functions against the simulator, counts their DynamoDB requests, events, metrics and log bytes,
// and prices them with the template's settings. TestCostTableCurrent fails when the checked-in
// table differs from what this prints.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/shardwise/shardwise/shared/deploy"
)

func main() {
	m, err := deploy.Measure(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(deploy.CostTable(m, deploy.ListPrices, deploy.DefaultAssumptions))
}
