package main

import (
	"os"

	"github.com/shardwise/shardwise/shared/deploy"
)

func main() {
	out, err := deploy.YAML(deploy.Options{})
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(out)
}
