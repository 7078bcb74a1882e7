// Command replicas is the shardwise replicas Lambda: wiring only (configuration, clients, lambda.Start).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardwise/shardwise/shared/handler"
)

func main() {
	e, metrics, err := handler.Env(context.Background(), "replicas")
	if err != nil {
		log.Fatal(err)
	}
	f := &handler.Function{Name: "replicas", Engine: e, Metrics: metrics}
	lambda.Start(f.Replicas)
}
