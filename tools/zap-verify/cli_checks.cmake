# Command-line checks of zap-verify (docs/bad-input.md, rows Z*), one per
# CHECK:
#   pipe      a batch read from a pipe (/dev/stdin), a FIFO and bash's <(...)
#             gives the verdicts of the file itself (with ASan: no read past
#             what arrived)
#   dir       a directory as --batch fails naming it and saying so
#   pool      a pool budget below the batch's size fails naming the file and
#             the budget
#   refusals  options that do not apply: exit status 2 and a message naming
#             the option
#   mpirun    --inproc-ranks under mpirun -np 2: exit status 2 and a message
# ZV: the program; DIR: a scratch folder; MPIEXEC: mpirun (mpirun check).
set(batch ${DIR}/cli_${CHECK}.svb)
set(bits ${DIR}/cli_${CHECK}.bits)
execute_process(COMMAND ${ZV} gen --items 1000 --keys 16 --invalid-fraction 0.3 --seed 8 --msg-len var
                        --out ${batch} --expect ${bits} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen failed: ${rc}")
endif()

# Runs the shell command line cmd; fails unless it exits with want and its
# stdout and stderr match re.
function(expect name want re cmd)
  execute_process(COMMAND sh -c "${cmd}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL want OR NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "${name}: exit ${rc} (want ${want}), output not matching '${re}':\n${out}${err}")
  endif()
  message("ok: ${name}")
endfunction()

set(run "${ZV} run --inproc-ranks 2 --expect ${bits} --quiet")
if(CHECK STREQUAL "pipe")
  # 750 KB: the buffer that starts at 64 KiB doubles several times.
  expect("pipe" 0 "match \\(1000 items\\)" "cat ${batch} | ${run} --batch /dev/stdin")
  file(REMOVE ${DIR}/cli.fifo)
  expect("fifo" 0 "match \\(1000 items\\)"
         "mkfifo ${DIR}/cli.fifo && (cat ${batch} > ${DIR}/cli.fifo &) && ${run} --batch ${DIR}/cli.fifo")
  file(REMOVE ${DIR}/cli.fifo)
  expect("process substitution" 0 "match \\(1000 items\\)" "bash -c '${run} --batch <(cat ${batch})'")
  # A pipe that ends inside the header: refused by the parser, read in bounds.
  expect("short pipe" 3 "shorter than a batch header: 10 bytes" "head -c 10 ${batch} | ${run} --batch /dev/stdin")
elseif(CHECK STREQUAL "dir")
  expect("directory" 3 "cannot load ${DIR}: it is a directory" "${run} --batch ${DIR}")
elseif(CHECK STREQUAL "pool")
  expect("pool budget" 3 "cannot load ${batch}: the pool budget is too small for [0-9]+ bytes \\(budget 1024 bytes"
         "ZAP_UMA_POOL_BYTES=1K ${run} --batch ${batch}")
elseif(CHECK STREQUAL "refusals")
  set(b "--batch ${batch}")
  expect("run --ranks" 2 "zap-verify run: --ranks does not apply to run" "${ZV} run ${b} --ranks 1,2")
  expect("run --max-log2" 2 "--max-log2 does not apply to run" "${ZV} run ${b} --max-log2 10")
  expect("run --out" 2 "--out does not apply to run" "${ZV} run ${b} --out x")
  expect("gen --mode" 2 "zap-verify gen: --mode does not apply to gen" "${ZV} gen --items 5 --out x --mode bcast")
  expect("gen --inproc-ranks" 2 "--inproc-ranks does not apply to gen" "${ZV} gen --items 5 --out x --inproc-ranks 2")
  expect("bench --batch" 2 "zap-verify bench: --batch does not apply to bench" "${ZV} bench ${b}")
  expect("bench --items" 2 "--items does not apply to bench" "${ZV} bench --items 5")
  foreach(opt "--seed 3" "--keys 4" "--invalid-fraction 0.5" "--msg-len var" "--batch-id 7")
    string(REGEX REPLACE " .*" "" name "${opt}")
    expect("run --batch ${opt}" 2 "${name} applies to --gen N, not to --batch FILE" "${run} ${b} ${opt}")
  endforeach()
  expect("--format alone" 2 "--format applies to --verdicts-out FILE" "${run} ${b} --format indices")
  expect("bcast segments" 2 "--segment-bytes applies to --mode scatter"
         "${run} ${b} --mode bcast --segment-bytes 4K")
  expect("bench bcast segments" 2 "--segment-bytes applies to --mode scatter"
         "${ZV} bench --mode bcast --segment-bytes 4K")
  expect("bench root" 2 "--root 2 but --ranks includes 1" "${ZV} bench --root 2 --ranks 1,4")
  # What does apply still runs.
  expect("run --gen with gen options" 0 "match \\(300 items\\)"
         "${ZV} run --inproc-ranks 2 --quiet --gen 300 --seed 3 --keys 4 --msg-len var --batch-id 7")
  expect("--format with --verdicts-out" 0 "match \\(1000 items\\)"
         "${run} ${b} --verdicts-out ${DIR}/cli.idx --format indices")
elseif(CHECK STREQUAL "mpirun")
  expect("--inproc-ranks under mpirun -np 2" 2
         "--inproc-ranks runs ranks as threads of one process, but this process is one of several"
         "${MPIEXEC} --oversubscribe -np 2 ${ZV} run --gen 100 --inproc-ranks 3")
  expect("--inproc-ranks under mpirun -np 1" 0 "match \\(100 items\\)"
         "${MPIEXEC} -np 1 ${ZV} run --gen 100 --inproc-ranks 3 --quiet")
else()
  message(FATAL_ERROR "unknown CHECK '${CHECK}'")
endif()
