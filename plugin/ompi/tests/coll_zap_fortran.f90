! coll_zap_fortran: a Fortran MPI program (the `mpi` module) that calls the
! collectives the zap coll component routes and checks every result; Fortran
! reaches the component through Open MPI's C layer, as C does. Each rank
! writes one line per case (name, rank, a checksum of the result) to
! DIGEST_FILE.<rank>; coll_zap_test.sh runs it with and without the component
! and compares the files. Exit status 0: every check held.
!
!   coll_zap_fortran DIGEST_FILE
program coll_zap_fortran
  use mpi
  implicit none
  integer, parameter :: n = 5000
  integer :: ierr, rank, nranks, i, root, req, failures, total, unit
  integer :: ia(n), ib(n)
  real :: ra(n), rb(n)
  double precision :: da(n), db(n)
  logical :: la(n), lb(n), want
  integer :: r
  integer, allocatable :: g(:), s(:)
  integer(kind=8) :: check
  character(len=256) :: path, base

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  failures = 0
  call get_command_argument(1, base)
  write (path, '(A,".",I0)') trim(base), rank
  open (newunit=unit, file=trim(path), status='replace', action='write')

  ! Allreduce: INTEGER sum and max, REAL sum, DOUBLE PRECISION sum and min,
  ! in place too. Small integers: exact in every order.
  do i = 1, n
    ia(i) = mod(i * 13 + rank * 7, 50) - 25
    ra(i) = real(mod(i + rank, 40))
    da(i) = dble(mod(i * 3 + rank, 60)) - 30d0
  end do
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect_int('allreduce.integer.sum', ib, ierr)
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call expect_int('allreduce.integer.max', ib, ierr)
  call MPI_Allreduce(ra, rb, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect_real('allreduce.real.sum', rb, ierr)
  call MPI_Allreduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_MIN, MPI_COMM_WORLD, ierr)
  call expect_double('allreduce.double.min', db, ierr)
  db = da
  call MPI_Allreduce(MPI_IN_PLACE, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect_double('allreduce.double.sum.inplace', db, ierr)
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_BOR, MPI_COMM_WORLD, ierr)
  call expect_int('allreduce.integer.bor', ib, ierr)
  ! LOGICAL and a logical op (zap takes no Fortran LOGICAL): the component below runs it.
  do i = 1, n
    la(i) = mod(i + rank, 3) == 0
  end do
  call MPI_Allreduce(la, lb, n, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  do i = 1, n
    want = .false.
    do r = 0, nranks - 1
      want = want .or. mod(i + r, 3) == 0
    end do
    if (lb(i) .neqv. want) then
      call fail('allreduce.logical.lor: wrong value')
      exit
    end if
  end do
  ib = merge(1, 0, lb)
  call digest('allreduce.logical.lor', ib, ierr)

  ! Non-blocking allreduce completed by MPI_Wait.
  call MPI_Iallreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call expect_int('iallreduce.integer.sum', ib, ierr)

  ! Bcast from every root.
  do root = 0, nranks - 1
    if (rank == root) then
      do i = 1, n
        ib(i) = i * 3 + root
      end do
    else
      ib = -1
    end if
    call MPI_Bcast(ib, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    do i = 1, n
      if (ib(i) /= i * 3 + root) then
        call fail('bcast: wrong data')
        exit
      end if
    end do
    call digest('bcast', ib, ierr)
  end do

  ! Allgather and scatter.
  allocate (g(n * nranks), s(n * nranks))
  do i = 1, n
    ia(i) = rank * 100000 + i
  end do
  call MPI_Allgather(ia, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do i = 1, n * nranks
    if (g(i) /= ((i - 1) / n) * 100000 + mod(i - 1, n) + 1) then
      call fail('allgather: wrong data')
      exit
    end if
  end do
  call digest('allgather', g, ierr)
  do i = 1, n * nranks
    s(i) = i
  end do
  call MPI_Scatter(s, n, MPI_INTEGER, ib, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (ib(i) /= rank * n + i) then
      call fail('scatter: wrong data')
      exit
    end if
  end do
  call digest('scatter', ib, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) call fail('barrier')

  close (unit)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) write (*, '(A,I0,A,I0,A)') 'coll_zap_fortran: ', nranks, ' ranks, ', total, ' failures'
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write (0, '("[rank ",I0,"] FAIL ",A)') rank, what
    failures = failures + 1
  end subroutine

  subroutine digest(name, v, rc)
    character(len=*), intent(in) :: name
    integer, intent(in) :: v(:), rc
    integer :: k
    if (rc /= MPI_SUCCESS) call fail(name // ': MPI error')
    check = 0
    do k = 1, size(v)
      check = modulo(check * 31_8 + int(v(k), 8), 1000000007_8)
    end do
    write (unit, '(A," ",I0," ",I0)') name, rank, check
  end subroutine

  subroutine expect_int(name, v, rc)
    character(len=*), intent(in) :: name
    integer, intent(in) :: v(:), rc
    integer :: k, r, want, x
    do k = 1, n
      want = 0
      do r = 0, nranks - 1
        x = mod(k * 13 + r * 7, 50) - 25
        if (index(name, '.sum') > 0) want = want + x
        if (index(name, '.max') > 0) then
          if (r == 0) then
            want = x
          else
            want = max(want, x)
          end if
        end if
        if (index(name, '.bor') > 0) want = ior(want, x)
      end do
      if (v(k) /= want) then
        call fail(name // ': wrong value')
        exit
      end if
    end do
    call digest(name, v, rc)
  end subroutine

  subroutine expect_real(name, v, rc)
    character(len=*), intent(in) :: name
    real, intent(in) :: v(:)
    integer, intent(in) :: rc
    integer :: k, r
    real :: want
    do k = 1, n
      want = 0
      do r = 0, nranks - 1
        want = want + real(mod(k + r, 40))
      end do
      if (v(k) /= want) then
        call fail(name // ': wrong value')
        exit
      end if
    end do
    call digest(name, int(v), rc)
  end subroutine

  subroutine expect_double(name, v, rc)
    character(len=*), intent(in) :: name
    double precision, intent(in) :: v(:)
    integer, intent(in) :: rc
    integer :: k, r
    double precision :: want, x
    do k = 1, n
      want = 0
      do r = 0, nranks - 1
        x = dble(mod(k * 3 + r, 60)) - 30d0
        if (index(name, '.sum') > 0) want = want + x
        if (index(name, '.min') > 0) then
          if (r == 0) then
            want = x
          else
            want = min(want, x)
          end if
        end if
      end do
      if (v(k) /= want) then
        call fail(name // ': wrong value')
        exit
      end if
    end do
    call digest(name, int(v), rc)
  end subroutine
end program
