# zap-verify gen, then run on the file with --expect (2 inproc ranks), then
# check the verdict files; with CORRUPT, flip a record byte and expect a
# refusal (non-zero exit, the CRC reason on stderr).
set(batch ${DIR}/smoke${CORRUPT}.svb)
set(bits ${DIR}/smoke${CORRUPT}.bits)
execute_process(COMMAND ${ZV} gen --items 1000 --keys 16 --invalid-fraction 0.3 --seed 5 --msg-len var
                        --out ${batch} --expect ${bits} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen failed: ${rc}")
endif()
if(CORRUPT)
  # One byte inside record 0 (offset 100): the CRC no longer matches.
  execute_process(COMMAND sh -c "printf '\\377' | dd of=${batch} bs=1 seek=100 conv=notrunc 2>/dev/null"
                  RESULT_VARIABLE rc)
  execute_process(COMMAND ${ZV} run --batch ${batch} --inproc-ranks 2 RESULT_VARIABLE rc ERROR_VARIABLE err
                  OUTPUT_VARIABLE out)
  if(rc EQUAL 0 OR NOT err MATCHES "crc32c mismatch")
    message(FATAL_ERROR "corrupt batch: rc ${rc}, stderr: ${err}")
  endif()
  return()
endif()
execute_process(COMMAND ${ZV} run --batch ${batch} --inproc-ranks 2 --expect ${bits}
                        --verdicts-out ${DIR}/smoke.out.bits RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "match \\(1000 items\\)")
  message(FATAL_ERROR "run failed: ${rc}")
endif()
file(SHA256 ${bits} a)
file(SHA256 ${DIR}/smoke.out.bits b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "verdict file differs from the expected one")
endif()
execute_process(COMMAND ${ZV} run --batch ${batch} --inproc-ranks 3 --mode bcast --format indices
                        --verdicts-out ${DIR}/smoke.idx --expect ${bits} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bcast run failed: ${rc}: ${out}")
endif()
execute_process(COMMAND ${ZV} run --batch ${batch} --inproc-ranks 1 --expect ${DIR}/smoke.idx
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "indices file as --expect failed: ${rc}: ${out}")
endif()
# An expected-verdicts file that disagrees (index 0 listed invalid although
# the generator's item 0 is valid) must give exit status 1 and say MISMATCH.
file(READ ${bits} raw HEX)
string(SUBSTRING "${raw}" 48 2 byte0)
math(EXPR b0 "0x${byte0} & 1")
if(b0 EQUAL 1)
  file(WRITE ${DIR}/smoke.wrong.idx "0\n")
else()
  file(WRITE ${DIR}/smoke.wrong.idx "1\n")
endif()
execute_process(COMMAND ${ZV} run --batch ${batch} --inproc-ranks 2 --expect ${DIR}/smoke.wrong.idx
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 1 OR NOT out MATCHES "result: MISMATCH")
  message(FATAL_ERROR "a wrong --expect file must give exit status 1: ${rc}: ${out}")
endif()
