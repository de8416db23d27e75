// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "castline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "castline", targets: ["castline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        // `--metrics`: Prometheus exposition served over HTTP.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        // Runs a session's servers and pipelines as one group: graceful shutdown on SIGINT/SIGTERM.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Already in the graph through Hummingbird; named so the metrics server's log goes to stderr.
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        // AES-128-CBC for encrypted HLS segments (_CryptoExtras' AES._CBC).
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        // AsyncChannel: an HLS reading handed over as a sequence with back-pressure (in the graph through service-lifecycle).
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.0.0"),
        // `load`'s viewers: GETs on NIO's shared event loops, a connection pool each (in the graph through Hummingbird).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.100.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-audio-1.0 gstreamer-video-1.0 gstreamer-pbutils-1.0 gstreamer-sdp-1.0 gio-2.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]
        ),
        .target(name: "CGStreamerShim", dependencies: ["CGStreamer"]),
        // libebur128: EBU R128 loudness and true peak for the alarms stage (not a meter written here).
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128", providers: [.apt(["libebur128-dev"])]),
        // GLib's strings, casts and a shared lock: what GstKit and GIONet both need.
        .target(name: "GLibSupport", dependencies: ["CGStreamer"]),
        .target(name: "GstKit", dependencies: ["CGStreamer", "CGStreamerShim", "GLibSupport"]),
        // GIO networking (GLib's, not GStreamer's): the TLS relay in front of rtmp2sink and the TCP reachability check.
        .target(name: "GIONet", dependencies: ["CGStreamer", "CGStreamerShim", "GLibSupport"]),
        .target(name: "PipelineConfig", dependencies: ["Yams", "Timing"]),
        // Small pieces shared without GStreamer: retry backoff, monotonic time, durations as config text.
        .target(name: "Timing"),
        // castline's HTTP client (URLSession, timeouts of its own): the HLS client's fetches,
        // `ctl`'s requests and event stream, the local ingest's checks; and GETs on NIO's event
        // loops for `load`'s thousand viewers.
        .target(name: "HTTPClient", dependencies: [
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOFoundationCompat", package: "swift-nio"),
        ]),
        // castline's own HLS client: playlists, the start and rendition choice, ABR, live reload, segments, keys. No GStreamer.
        .target(name: "HLS", dependencies: ["Timing", "HTTPClient", .product(name: "_CryptoExtras", package: "swift-crypto"),
                                            .product(name: "AsyncAlgorithms", package: "swift-async-algorithms")]),
        // Runs nginx-rtmp and stunnel on loopback: the ingest for `castline ingest`, the demo and the tests.
        .target(name: "LocalIngest", dependencies: ["HTTPClient"]),
        .target(name: "CastlineKit", dependencies: ["GstKit", "GIONet", "PipelineConfig", "HLS", "HTTPClient", "Timing",
                                            .product(name: "Crypto", package: "swift-crypto")]),
        // Stage plugins: one folder each under Plugins/, depending on CastlineKit only, built as one
        // module so a new plugin is its folder and its line in Plugins/BuiltinStages.swift, nothing else.
        .target(name: "StagePlugins", dependencies: ["CastlineKit", "CEbur128", "Timing"], path: "Plugins"),
        // What a run does around its pipelines: the session and its lifecycle, the control API,
        // stats outputs and the terminal. The executable parses flags and calls it.
        .target(
            name: "CastlineApp",
            dependencies: [
                "CastlineKit", "StagePlugins", "LocalIngest", "HTTPClient",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Control/Page"],
            plugins: ["EmbedPage"]
        ),
        // The control page's files (Sources/CastlineApp/Control/Page) compiled into the binary.
        .executableTarget(name: "EmbedFiles", path: "BuildTools/EmbedFiles"),
        .plugin(name: "EmbedPage", capability: .buildTool(), dependencies: ["EmbedFiles"], path: "BuildTools/EmbedPage"),
        .executableTarget(
            name: "castline",
            dependencies: [
                "CastlineApp", "LocalIngest",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // What the GstKit and GIONet tests share: a locked value, and waiting for a condition.
        .target(name: "TestSupport", dependencies: ["GstKit"], path: "Tests/TestSupport"),
        // What the tests of runs share: a run's events, waited on by what they say.
        .target(name: "RunTestSupport", dependencies: ["CastlineKit"], path: "Tests/RunTestSupport"),
        .testTarget(name: "GstKitTests", dependencies: ["GstKit", "LocalIngest", "TestSupport"]),
        .testTarget(name: "GIONetTests", dependencies: ["GIONet", "LocalIngest", "TestSupport"]),
        .testTarget(name: "PipelineConfigTests", dependencies: ["PipelineConfig"]),
        .testTarget(name: "HLSTests", dependencies: ["HLS"]),
        .testTarget(name: "LocalIngestTests", dependencies: ["LocalIngest", "HTTPClient"]),
        .testTarget(name: "CastlineKitTests", dependencies: ["CastlineKit", "StagePlugins", "TestSupport", "RunTestSupport", "Timing", "LocalIngest"]),
        .testTarget(name: "CastlineAppTests", dependencies: ["CastlineApp", "CastlineKit", "StagePlugins"]),
        .testTarget(name: "DelayPluginTests", dependencies: ["CastlineKit", "StagePlugins", "TestSupport", "RunTestSupport"]),
        .testTarget(name: "StatsPluginTests", dependencies: ["StagePlugins", "TestSupport", "RunTestSupport"]),
        // Runs the built `castline` binary against real servers and judges the output with ffprobe.
        .testTarget(name: "EndToEndTests", dependencies: ["castline", "LocalIngest", "HTTPClient", "TestSupport"],
                    exclude: ["Support/hostile_hls.py", "Support/control_abuse.py", "Support/control_page.py", "Support/webhook_sink.py",
                              "Support/whip_server.py"]),
    ],
    swiftLanguageModes: [.v6]
)
