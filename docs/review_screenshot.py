"""Makes docs/review_example.png: a short Word document with slips, reviewed by ``lint --review`` with the shipped
bundle, opened in LibreOffice (headless, its tracked changes shown as LibreOffice shows them) and its first page rendered
to PNG.

    python docs/review_screenshot.py          # needs the 'documents' extra, LibreOffice and pdftoppm (poppler-utils)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARAGRAPHS = [
    [("项目进展报告", "b")],
    [("本季度我们", ""), ("以经", ""), ("完成了新系统的上线工作，用户反馈总体良好。", "")],
    [("下一步计划在三月底前完成数据迁移，并对", ""), ("相关人员", "b"), ("进行培训，请各部门积极", ""),
     ("陪合", ""), ("。", "")],
    [("会议决定由技术部负责", ""), ("具体实施", "i"), ("，财务部负责预算", ""), ("申", ""), ("批。", "")],
]
PDF_OPTIONS = json.dumps({"ExportNotes": {"type": "boolean", "value": "false"}})  # (no margin for comments here)


def main() -> None:
    from docx import Document
    from docx.shared import Pt

    soffice, pdftoppm = shutil.which("soffice"), shutil.which("pdftoppm")
    if soffice is None or pdftoppm is None:
        raise SystemExit("needs LibreOffice (soffice) and pdftoppm (poppler-utils)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        document = Document()
        for runs in PARAGRAPHS:
            p = document.add_paragraph()
            for text, style in runs:
                run = p.add_run(text)
                run.bold, run.italic = "b" in style or None, "i" in style or None
                run.font.size = Pt(14)
        document.save(str(folder / "report.docx"))
        done = subprocess.run([sys.executable, "-m", "corrector", "lint", "report.docx", "--review", "reviewed.docx",
                               "--no-cache", "--no-progress"], cwd=folder, capture_output=True, text=True)
        print(done.stdout + done.stderr, end="")
        subprocess.run([soffice, "--headless", "--norestore", f"-env:UserInstallation=file://{folder / 'profile'}",
                        "--convert-to", f"pdf:writer_pdf_Export:{PDF_OPTIONS}", "--outdir", str(folder),
                        str(folder / "reviewed.docx")], check=True, capture_output=True, timeout=300)
        subprocess.run([pdftoppm, "-png", "-r", "100", "-f", "1", "-l", "1", "-x", "60", "-y", "70", "-H", "200", "-W", "1100",
                        str(folder / "reviewed.pdf"), str(folder / "page")], check=True)
        page = next(folder.glob("page*.png"))
        shutil.copyfile(page, HERE / "review_example.png")
        print(f"wrote {HERE / 'review_example.png'}")


if __name__ == "__main__":
    main()
