! coll/triad under a Fortran program: MPI_BCAST of 1 Mi integers (4 MiB)
! over MPI_COMM_WORLD from every root in turn, then MPI_IBCAST of them
! with work between the start and MPI_WAIT, every element checked at
! every rank.  Who served them: coll/triad's MPI_T counter, read by a C
! helper (test_mpi_coll_fc.c), must have counted one per broadcast with
! "triad" as the argument, none with "none".
program test_mpi_coll_f
  use mpi
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    function served() bind(c, name='test_mpi_coll_served')
      import :: c_long
      integer(c_long) :: served
    end function served
    subroutine done() bind(c, name='test_mpi_coll_done')
    end subroutine done
  end interface
  integer, parameter :: n = 1048576
  integer, allocatable :: buf(:)
  integer :: ierr, rank, nranks, root, i, bad, total, req, pass
  integer(c_long) :: before, after, want
  double precision :: work
  character(len=16) :: expect

  call get_command_argument(1, expect)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  allocate(buf(n))
  bad = 0
  before = served()
  work = 0
  ! pass 0: MPI_BCAST; pass 1: MPI_IBCAST, work, MPI_WAIT
  do pass = 0, 1
    do root = 0, nranks - 1
      if (rank == root) then
        buf = [(i * 7 + root + pass, i = 1, n)]
      else
        buf = -1
      end if
      if (pass == 0) then
        call MPI_BCAST(buf, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
      else
        call MPI_IBCAST(buf, n, MPI_INTEGER, root, MPI_COMM_WORLD, req, ierr)
        do i = 1, 4000000
          work = work * 0.5d0 + i
        end do
        call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
      end if
      do i = 1, n
        if (buf(i) /= i * 7 + root + pass) then
          bad = bad + 1
          exit
        end if
      end do
    end do
  end do
  after = served()
  want = 0
  if (trim(expect) == 'triad') want = 2 * nranks
  if (work < 0) bad = bad + 1
  if (after - before /= want) then
    print '(a,i0,a,i0,a,i0)', 'rank ', rank, ': coll/triad served ', after - before, &
      ' broadcasts, expected ', want
    bad = bad + 1
  end if
  if (trim(expect) /= 'triad' .and. trim(expect) /= 'none') bad = bad + 1
  call MPI_ALLREDUCE(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a,i0,a)', 'test_mpi_coll_f: ', nranks, ' ranks, ', &
    after - before, ' served by coll/triad at rank 0: ', total, ' failure(s)'
  deallocate(buf)
  call done()
  call MPI_FINALIZE(ierr)
  if (total /= 0) error stop 1
end program test_mpi_coll_f
