// Command move is the shardwise move Lambda: wiring only (configuration, clients, lambda.Start).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardwise/shardwise/shared/handler"
)

func main() {
	f, err := handler.Env(context.Background(), "move")
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(f.Move)
}
