// Command detect is the shardwise detect Lambda: wiring only (configuration, clients, lambda.Start).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardwise/shardwise/shared/handler"
)

func main() {
	f, err := handler.Env(context.Background(), "detect")
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(f.Detect)
}
