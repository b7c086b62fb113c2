// Command toolservice is a tool service of your own, standalone: it uses
// only the module's public packages (pkg/fleet), so a copy of this file in
// another module builds as it is. It serves one typed tool, get_weather,
// on the NATS server named by PTC_NATS_URL (default nats://127.0.0.1:4222),
// as a NATS micro service that workers discover; missions call it from
// PTC-Lisp as (tool/get_weather {:city "Oslo"}). README.md says how to run
// it and a mission against it.
package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
)

// WeatherArgs are get_weather's arguments; json tags name them. An
// argument a caller misspells is refused, with the closest name.
type WeatherArgs struct {
	City string `json:"city"`
}

// Weather is get_weather's result.
type Weather struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
	Sky   string `json:"sky"`
}

// getWeather makes up a city's weather, the same every time (a real
// service would read its own data).
func getWeather(_ context.Context, a WeatherArgs) (Weather, error) {
	city := strings.TrimSpace(a.City)
	if city == "" {
		return Weather{}, errors.New("city is empty")
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(city)))
	n := h.Sum32()
	skies := []string{"clear", "cloudy", "rain", "snow"}
	return Weather{City: city, TempC: int(n%31) - 5, Sky: skies[n/31%4]}, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	url := os.Getenv("PTC_NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, nats.Name("weather-tools"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to %s: %w (start a NATS server with JetStream first; README.md)", url, err)
	}
	defer nc.Close()
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "weather", Description: "made-up weather"})
	if err != nil {
		return err
	}
	// The signature, "(city :string) -> {city :string, temp_c :int, sky
	// :string}", is derived from the Go types.
	err = fleet.RegisterTyped(svc, "get_weather", fleet.ToolSpec{Description: "The weather in a city now."}, getWeather)
	if err != nil {
		return err
	}
	log.Printf("serving get_weather on %s; stop with Ctrl-C", url)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return svc.Stop(sctx)
}
