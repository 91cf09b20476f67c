"""The instructor's grading pipeline around nbgrader, one module per stage.

Follow ``python -m grader grade LAB EXPORT`` (grader/__main__.py) from the export to the CSV::

    ingest.import_submissions    1. the export (folder or zip) ->
                                    grading/submitted/<student>/<lab>/<lab>.ipynb
    classroom.autograde          2. every changed submission, --jobs at a time, one job each:
      job.grade_submission
        preflight.preflight          a. decode, parse, strip outputs, match cells (nothing executed)
        secret.Secret.seeds          b. this student's hidden-case seeds (HMAC of the instructor's
                                        secret)
        autograde.run_nbgrader       c. nbgrader autograde; its kernel (sandbox_kernel) runs in the
                                        sandbox (grader/sandbox.py) and cannot see the notebook;
                                        outputs capped (output_cap)
        recheck.plan, recheck.run_recheck
          -> recheck_worker.worker   d. a fresh sandboxed process re-runs the cells and only *calls*
                                        the student's functions; answers come back as plain data
                                        (wire)
        verdict.verdicts, verdict.combine
                                     e. answers judged here with the reference; fail closed
        publish.publish              f. results/<lab>/<student>.json, autograded notebook, feedback
                                        page
    publish.export_csv, publish.report
                                 3. grading/<lab>_grades.csv and grading/<lab>_report.txt

Shared by the stages: ``lab`` (the lab and notebook helpers), ``workspace`` (the grading folder, the
settings, the result cache key). Trust boundary: everything here runs as the instructor except
``sandbox_kernel`` and ``recheck_worker``, which run inside the sandbox with the student's code and
hand back only data. ``grader.grade`` keeps the names older code imports. The student edition
(references and hidden-case generators never installed for students nor present in a sandbox) is
designed in grader/DESIGN.md.
"""
