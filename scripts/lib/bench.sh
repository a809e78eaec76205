# Sourced by the drill scripts: builds `storekeeper` and `storekeeper-bench` (the drills drive the first as child
# processes, from the same folder) and sets BENCH to the second. `build_bench debug` for the debug build.
build_bench() {
  local configuration=${1:-release}
  for product in storekeeper storekeeper-bench; do
    swift build -c "$configuration" --product "$product" >/dev/null 2>&1 || swift build -c "$configuration" --product "$product"
  done
  BENCH="$(swift build -c "$configuration" --show-bin-path)/storekeeper-bench"
}
